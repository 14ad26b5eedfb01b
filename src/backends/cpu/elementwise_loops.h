// The inner loops of the elementwise kernels: 1-D runs over n elements, compiled once per SIMD
// level (src/backends/cpu/simd/elementwise_{generic,avx2,avx512}.cc, all from the one source
// simd/elementwise_loops.inc) and picked at run time (NOTE [SIMD levels]).
//
// NOTE [Elementwise loops]
// A loop sees one run: pointers to its first elements and strides in elements. A stride of 0
// means "the same element for the whole run" (a broadcast scalar). The loops have fast paths for
// the shapes the driver (elementwise_kernels.cc) produces most: every operand contiguous, or one
// side a scalar; any other stride takes a plain strided loop. Outputs of binary, unary and where
// loops are contiguous (they are fresh tensors); cast loops also take an output stride because
// copy_() writes into views. bool is read as a byte (nonzero = true) and written as 0 or 1.
#pragma once
#include <cstdint>

#include "spore/dtype.h"
#include "spore/op_list.h"

namespace spore::cpu::ew {

using BinaryLoop = void (*)(const void* a, int64_t sa, const void* b, int64_t sb, void* out,
                            int64_t n);
using UnaryLoop = void (*)(const void* x, int64_t sx, void* out, int64_t n);
// out = cond ? x : y, cond read as bytes.
using WhereLoop = void (*)(const void* cond, int64_t sc, const void* x, int64_t sx, const void* y,
                           int64_t sy, void* out, int64_t n);
using CastLoop = void (*)(const void* x, int64_t sx, void* out, int64_t so, int64_t n);

// Loops indexed by the OpId itself and the dtype they compute in (the input dtype; cast:
// [from][to]). nullptr: the op does not run in that dtype, or is not a binary (unary) op.
// NOTE [Loops keyed by op]: the rows are indexed by OpId, not by an offset from the first binary
// op, so the order of op_list.h is no contract of the CPU backend; a row per op costs a few KiB
// per SIMD level and the look-up is the same single indexed load.
struct LoopTable {
  BinaryLoop binary[kNumOps][kNumDTypes] = {};
  UnaryLoop unary[kNumOps][kNumDTypes] = {};
  WhereLoop where[kNumDTypes] = {};
  CastLoop cast[kNumDTypes][kNumDTypes] = {};
};

void fill_loops_generic(LoopTable& t);
void fill_loops_avx2(LoopTable& t);
void fill_loops_avx512(LoopTable& t);

// The table of the current simd_level() (tests switch levels with set_simd_level).
const LoopTable& loops();

}  // namespace spore::cpu::ew
