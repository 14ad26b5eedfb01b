// Internal: the LLM gradient kernels of one SIMD level (NOTE [LLM gradients] in docs/design.md),
// as a table that llm_grad_kernels.cc reads at call time, so set_simd_level switches them in a
// running process as it does the forward kernels (llm_level_kernels.h).
#pragma once
#include "spore/op_registry.h"

namespace spore::cpu {

// kSlotMatmulQ64: matmul_q with float64 activations (the dequantised product in float64, the
// gradient check's reference); the float32 matmul_q kernels live in quant_kernels.inc.
enum LlmGradSlot { kSlotAttentionGrad, kSlotMatmulQGrad, kSlotMatmulQ64, kNumLlmGradSlots };

struct LlmGradKernelTable {
  KernelFn fn[kNumLlmGradSlots][kNumDTypes] = {};
};

// Each is compiled with its level's flags (simd/llm_grad_<level>.cc), so it is only called on a
// CPU that has the level.
void fill_llm_grad_kernels_generic(LlmGradKernelTable& t);
void fill_llm_grad_kernels_avx2(LlmGradKernelTable& t);
void fill_llm_grad_kernels_avx512(LlmGradKernelTable& t);

}  // namespace spore::cpu
