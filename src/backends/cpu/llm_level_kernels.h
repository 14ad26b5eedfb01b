// Internal: the LLM block and matmul_q kernels of one SIMD level, as a table that
// llm_kernels.cc reads at call time, so that set_simd_level (and SPORE_CPU_ISA) switches them
// in a running process as it does the elementwise loops (tests compare every level in one run).
#pragma once
#include "spore/op_registry.h"
#include "spore/quant.h"

namespace spore::cpu {

enum LlmSlot { kSlotRmsNorm, kSlotRope, kSlotAttention, kSlotKvCacheWrite, kSlotMatmulQ, kNumLlmSlots };

struct LlmKernelTable {
  KernelFn fn[kNumLlmSlots][kNumDTypes] = {};  // matmul_q's slot stays empty: see matmul_q below
  // matmul_q (float32 activations) per weight type, indexed by the ggml type id that is the op's
  // attribute: the CPU's column of the quantization table (NOTE [Quantization types]).
  KernelFn matmul_q[kNumGgmlTypes] = {};
};

// Each fills the slots it implements; compiled with its level's flags (simd/llm_<level>.cc and
// simd/quant_<level>.cc), so it is only called on a CPU that has the level.
void fill_llm_kernels_generic(LlmKernelTable& t);
void fill_llm_kernels_avx2(LlmKernelTable& t);
void fill_llm_kernels_avx512(LlmKernelTable& t);
void fill_quant_kernels_generic(LlmKernelTable& t);
void fill_quant_kernels_avx2(LlmKernelTable& t);
void fill_quant_kernels_avx512(LlmKernelTable& t);
void fill_quant_kernels_avx512vnni(LlmKernelTable& t);  // avx512 with VNNI

}  // namespace spore::cpu
