// The elementwise inner loops at the generic SIMD level (NOTE [SIMD levels]); the code is
// elementwise_loops.inc, shared by every level.
#define SPORE_EW_LEVEL 0
#define SPORE_EW_NS generic
#include "elementwise_loops.inc"

namespace spore::cpu::ew {
void fill_loops_generic(LoopTable& t) { generic::fill(t); }
}  // namespace spore::cpu::ew
