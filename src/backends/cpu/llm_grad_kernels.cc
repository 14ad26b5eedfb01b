// Registers the LLM gradient kernels (llm_grad_kernels.inc: attention_grad, matmul_q_grad, and
// matmul_q's float64 reference product): one thin kernel per (op, dtype) that calls the current
// SIMD level's version (llm_grad_level_kernels.h), as llm_kernels.cc does for the forward blocks.
#include <utility>

#include "cpu_features.h"
#include "cpu_kernels.h"
#include "llm_grad_level_kernels.h"

namespace spore::cpu {

namespace {

const LlmGradKernelTable& level_table() {
  static const LlmGradKernelTable* tables = [] {
    auto* t = new LlmGradKernelTable[3];
    fill_llm_grad_kernels_generic(t[0]);
    t[1] = t[0];
    if (best_simd_level() >= SimdLevel::kAvx2) fill_llm_grad_kernels_avx2(t[1]);
    t[2] = t[1];
    if (best_simd_level() >= SimdLevel::kAvx512) fill_llm_grad_kernels_avx512(t[2]);
    return t;
  }();
  return tables[(int)simd_level()];
}

template <int Slot, int Dt>
void at_current_level(const KernelCall& call) {
  level_table().fn[Slot][Dt](call);
}

constexpr OpId kSlotOp[kNumLlmGradSlots] = {OpId::k_attention_grad, OpId::k_matmul_q_grad, OpId::k_matmul_q};

template <int Slot, int... Dt>
void register_slot(std::integer_sequence<int, Dt...>) {
  const LlmGradKernelTable& t = level_table();  // every level fills the same slots
  ((t.fn[Slot][Dt] ? register_kernel(kSlotOp[Slot], kCpuBackend, (DType)Dt, &at_current_level<Slot, Dt>) : void()),
   ...);
}

template <int... Slot>
void register_slots(std::integer_sequence<int, Slot...>) {
  (register_slot<Slot>(std::make_integer_sequence<int, kNumDTypes>{}), ...);
}

}  // namespace

void register_llm_grad_kernels() { register_slots(std::make_integer_sequence<int, kNumLlmGradSlots>{}); }

}  // namespace spore::cpu
