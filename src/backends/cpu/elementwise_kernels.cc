// TODO(foundation): CPU kernels of the elementwise family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_elementwise_kernels() {}
}  // namespace spore::cpu
