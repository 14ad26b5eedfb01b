// TODO(foundation): CPU kernels of the index family.
#include "cpu_kernels.h"

namespace spore::cpu {
void register_index_kernels() {}
}  // namespace spore::cpu
