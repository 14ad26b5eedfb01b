// TODO(foundation): CPU kernels of the matmul family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_matmul_kernels() {}
}  // namespace spore::cpu
