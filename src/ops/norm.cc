// TODO(foundation): definitions of the norm ops.
#include "op_families.h"

namespace spore::ops {
void define_norm_ops(OpTable& table) {}
}  // namespace spore::ops
