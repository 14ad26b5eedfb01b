// TODO(foundation): CPU kernels of the reduce family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_reduce_kernels() {}
}  // namespace spore::cpu
