// TODO(foundation): CPU kernels of the shape family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_shape_kernels() {}
}  // namespace spore::cpu
