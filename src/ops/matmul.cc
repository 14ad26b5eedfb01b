// TODO(foundation): definitions of the matmul ops.
#include "op_families.h"

namespace spore::ops {
void define_matmul_ops(OpTable& table) {}
}  // namespace spore::ops
