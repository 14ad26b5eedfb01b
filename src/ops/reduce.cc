// TODO(foundation): definitions of the reduce ops.
#include "op_families.h"

namespace spore::ops {
void define_reduce_ops(OpTable& table) {}
}  // namespace spore::ops
