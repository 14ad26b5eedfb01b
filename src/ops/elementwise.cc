// TODO(foundation): definitions of the elementwise ops.
#include "op_families.h"

namespace spore::ops {
void define_elementwise_ops(OpTable& table) {}
}  // namespace spore::ops
