// TODO(foundation): definitions of the shape ops.
#include "op_families.h"

namespace spore::ops {
void define_shape_ops(OpTable& table) {}
}  // namespace spore::ops
