// The elementwise inner loops at the avx512 SIMD level (NOTE [SIMD levels]); the code is
// elementwise_loops.inc, shared by every level.
// GCC 12's avx512fintrin.h trips -Wmaybe-uninitialized inside _mm512_cvtph_ps/_mm512_cvtps_ph
// (their "undefined" pass-through operand); the warning is about the header, not this code.
// clang (the fuzz preset) has no such warning and would warn about the unknown name instead.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define SPORE_EW_LEVEL 2
#define SPORE_EW_NS avx512
#include "elementwise_loops.inc"

namespace spore::cpu::ew {
void fill_loops_avx512(LoopTable& t) { avx512::fill(t); }
}  // namespace spore::cpu::ew
