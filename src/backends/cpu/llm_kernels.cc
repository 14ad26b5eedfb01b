// Registers the LLM block and matmul_q kernels (llm_kernels.inc, quant_kernels.inc): one thin
// kernel per (op, dtype) that calls the current SIMD level's version (llm_level_kernels.h).
#include <utility>

#include "cpu_features.h"
#include "cpu_kernels.h"
#include "llm_level_kernels.h"
#include "spore/error.h"

namespace spore::cpu {

namespace {

const LlmKernelTable& level_table() {
  // A level's fill function is compiled for that level, so it only runs where the CPU has it;
  // lesser machines get copies of the best table they can run.
  static const LlmKernelTable* tables = [] {
    auto* t = new LlmKernelTable[3];
    fill_llm_kernels_generic(t[0]);
    fill_quant_kernels_generic(t[0]);
    t[1] = t[0];
    if (best_simd_level() >= SimdLevel::kAvx2) fill_llm_kernels_avx2(t[1]), fill_quant_kernels_avx2(t[1]);
    t[2] = t[1];
    if (best_simd_level() >= SimdLevel::kAvx512) {
      fill_llm_kernels_avx512(t[2]);
      if (cpu_features().avx512vnni) fill_quant_kernels_avx512vnni(t[2]);
      else fill_quant_kernels_avx512(t[2]);
    }
    return t;
  }();
  return tables[(int)simd_level()];
}

template <int Slot, int Dt>
void at_current_level(const KernelCall& call) {
  if constexpr (Slot == kSlotMatmulQ) {
    // The type id was checked by inference against the table's rows with a product; every level
    // fills all of them (tests/ops/quant_matmul_test.cc runs each type at each level).
    const KernelFn fn = level_table().matmul_q[call.attrs.i(0)];
    if (!fn) throw Error(ErrorCode::kInternal, "matmul_q: no CPU kernel for weight type " + std::to_string(call.attrs.i(0)));
    fn(call);
  } else {
    level_table().fn[Slot][Dt](call);
  }
}

constexpr OpId kSlotOp[kNumLlmSlots] = {OpId::k_rms_norm, OpId::k_rope, OpId::k_attention, OpId::k_kv_cache_write,
                                        OpId::k_matmul_q};

template <int Slot, int... Dt>
void register_slot(std::integer_sequence<int, Dt...>) {
  const LlmKernelTable& generic = level_table();  // every level fills the same slots
  ((generic.fn[Slot][Dt] || (Slot == kSlotMatmulQ && Dt == (int)DType::kFloat32) ? register_kernel(kSlotOp[Slot], kCpuBackend, (DType)Dt, &at_current_level<Slot, Dt>)
                         : void()),
   ...);
}

template <int... Slot>
void register_slots(std::integer_sequence<int, Slot...>) {
  (register_slot<Slot>(std::make_integer_sequence<int, kNumDTypes>{}), ...);
}

}  // namespace

void register_llm_kernels() { register_slots(std::make_integer_sequence<int, kNumLlmSlots>{}); }

}  // namespace spore::cpu
