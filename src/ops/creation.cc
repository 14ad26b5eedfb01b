// TODO(foundation): definitions of the creation ops.
#include "op_families.h"

namespace spore::ops {
void define_creation_ops(OpTable& table) {}
}  // namespace spore::ops
