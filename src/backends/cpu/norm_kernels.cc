// TODO(foundation): CPU kernels of the norm family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_norm_kernels() {}
}  // namespace spore::cpu
