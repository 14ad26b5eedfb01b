// TODO(foundation): CPU kernels of the creation family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_creation_kernels() {}
}  // namespace spore::cpu
