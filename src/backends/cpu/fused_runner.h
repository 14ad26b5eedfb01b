// Runs a typed fused program (NOTE [Elementwise fusion]) over one block of elements at a time,
// with the very inner loops the standalone elementwise kernels use. Shared by fused_elementwise
// (fused_kernels.cc) and by fused_conv2d's epilogue (conv_fused.cc), so both compute exactly what
// the separate ops would.
#pragma once
#include <cstdint>
#include <vector>

#include "elementwise_loops.h"
#include "ops/fused_program.h"

namespace spore::cpu {

// 2048 elements: a float32 slot is 8 KiB, so a few live intermediates stay in L1 and a dozen in
// L2, while the loop calls per block stay few (512 measured ~10 % slower on a*b+c); a multiple
// of every vector width, so the loops' scalar tails only run at the end of the whole output, as
// in the standalone kernels.
constexpr int64_t kFusedBlock = 2048;
constexpr int64_t kFusedSlotBytes = kFusedBlock * 8;  // the widest dtype

class FusedRunner {
 public:
  // Resolves every instruction's loop at the current SIMD level; throws kUnsupported naming an
  // instruction without a CPU loop. `program` must be typed (ops::type_fused_program).
  explicit FusedRunner(ops::FusedProgram program);

  // Scratch slots the intermediates need (each kFusedSlotBytes).
  int slots() const { return num_slots_; }
  // One block of n <= kFusedBlock elements: input k at ptr[k], stepping stride[k] (1, or 0 for a
  // broadcast element); the result to dst. Only the last instruction writes dst, after the
  // others have read the inputs, element by element: dst may be input 0 (an in-place epilogue).
  // `slots` holds slots() slots.
  void run_block(const char* const* ptr, const int64_t* stride, void* dst, int64_t n, char* slots) const;

 private:
  struct Step {
    ew::BinaryLoop binary = nullptr;
    ew::UnaryLoop unary = nullptr;
    ew::WhereLoop where = nullptr;
    ew::CastLoop cast = nullptr;
  };
  ops::FusedProgram program_;
  std::vector<Step> steps_;
  std::vector<int> slot_;
  int num_slots_ = 0;
};

// This thread's scratch of at least `bytes`, 64-byte aligned and uninitialised (zeroing it per
// chunk would cost a tenth of a memory-bound kernel's time); kept for the thread's life.
char* fused_scratch(int64_t bytes);

}  // namespace spore::cpu
