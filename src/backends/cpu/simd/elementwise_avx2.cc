// The elementwise inner loops at the avx2 SIMD level (NOTE [SIMD levels]); the code is
// elementwise_loops.inc, shared by every level.
#define SPORE_EW_LEVEL 1
#define SPORE_EW_NS avx2
#include "elementwise_loops.inc"

namespace spore::cpu::ew {
void fill_loops_avx2(LoopTable& t) { avx2::fill(t); }
}  // namespace spore::cpu::ew
