// TODO(foundation): definitions of the index ops.
#include "op_families.h"

namespace spore::ops {
void define_index_ops(OpTable& table) {}
}  // namespace spore::ops
