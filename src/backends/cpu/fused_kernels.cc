// CPU kernel of fused_elementwise (NOTE [Elementwise fusion]): one pass over memory. The output
// is cut into blocks of kFusedBlock elements; for each block the program runs instruction by
// instruction with the very inner loops the standalone kernels use (the current SIMD level's
// LoopTable, NOTE [Elementwise loops]), reading inputs in place where they are flat (contiguous,
// or one broadcast element) and gathering the others into a block buffer, and keeping every
// intermediate in a block-sized scratch slot that stays in L1. Only the last instruction writes
// memory the size of the output. Blocks are grouped into the elementwise kernels' chunks for the
// thread pool, so results do not depend on the thread count.
#include <algorithm>
#include <new>
#include <vector>

#include "cpu_kernels.h"
#include "elementwise_iter.h"
#include "elementwise_loops.h"
#include "fused_runner.h"
#include "ops/fused_program.h"
#include "spore/error.h"

namespace spore::cpu {

namespace {

// An input the block reads: flat (pointer walks with the output, stride 1 or 0) or gathered
// through its broadcast strides into a block buffer.
struct InputPlan {
  const char* base = nullptr;
  int64_t elem = 0;
  int64_t stride = 1;  // flat inputs: 1 or 0
  bool gathered = false;
  int ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};  // elements, 0 on broadcast dimensions
};

InputPlan plan_input(const Tensor& t, const Shape& out) {
  InputPlan p;
  p.base = static_cast<const char*>(t.data_ptr());
  p.elem = (int64_t)t.itemsize();
  const int64_t n = out.numel();
  const int64_t m = t.numel();
  if (m == 1) {
    p.stride = 0;
    return p;
  }
  if (m == n && t.is_contiguous()) return p;
  p.gathered = true;
  p.ndim = out.ndim();
  const Shape& s = t.shape();
  for (int i = 0; i < p.ndim; ++i) {
    p.shape[i] = out[i];
    const int j = i - (out.ndim() - s.ndim());
    p.strides[i] = (j < 0 || s[j] == 1) ? 0 : t.strides()[j];
  }
  return p;
}

// Copies the elements of output positions [begin, begin + n) of a gathered input into dst,
// one run per innermost row, with the same-dtype cast loop (a plain copy).
void gather(const InputPlan& p, ew::CastLoop copy, int64_t begin, int64_t n, char* dst) {
  const int last = p.ndim - 1;
  int64_t idx[kMaxDims];
  int64_t off = 0, rem = begin;
  for (int d = last; d >= 0; --d) {
    idx[d] = rem % p.shape[d];
    rem /= p.shape[d];
    off += idx[d] * p.strides[d];
  }
  for (int64_t done = 0; done < n;) {
    const int64_t run = std::min(p.shape[last] - idx[last], n - done);
    copy(p.base + off * p.elem, p.strides[last], dst + done * p.elem, 1, run);
    done += run;
    idx[last] += run;
    off += run * p.strides[last];
    for (int d = last; d > 0 && idx[d] == p.shape[d]; --d) {
      idx[d] = 0;
      ++idx[d - 1];
      off += p.strides[d - 1] - p.shape[d] * p.strides[d];
    }
  }
}

void fused_kernel(const KernelCall& c) {
  ops::FusedProgram prog = ops::parse_fused_program(c.attrs.s(0));
  std::vector<DType> dtypes;
  for (const Tensor& t : c.inputs) dtypes.push_back(t.dtype());
  ops::type_fused_program(prog, dtypes);

  const FusedRunner runner(std::move(prog));
  const ew::LoopTable& t = ew::loops();

  const Tensor& out = c.outputs[0];
  const Shape& shape = out.shape();
  std::vector<InputPlan> inputs;
  std::vector<ew::CastLoop> copies;
  int n_gathered = 0;
  std::vector<int> gather_slot;
  for (const Tensor& x : c.inputs) {
    inputs.push_back(plan_input(x, shape));
    copies.push_back(t.cast[(int)x.dtype()][(int)x.dtype()]);
    gather_slot.push_back(inputs.back().gathered ? n_gathered++ : -1);
  }
  const int n_slots = runner.slots();
  char* out_base = static_cast<char*>(out.data_ptr());
  const int64_t out_elem = (int64_t)out.itemsize();
  const int64_t total_slots = n_slots + n_gathered;

  run_flat(shape.numel(), [&](int64_t chunk_begin, int64_t chunk_end) {
    char* slots = fused_scratch(total_slots * kFusedSlotBytes);
    std::vector<const char*> ptr(c.inputs.size());
    std::vector<int64_t> stride(c.inputs.size());
    for (int64_t b = chunk_begin; b < chunk_end; b += kFusedBlock) {
      const int64_t n = std::min(kFusedBlock, chunk_end - b);
      for (size_t k = 0; k < inputs.size(); ++k) {
        const InputPlan& p = inputs[k];
        if (p.gathered) {
          char* dst = slots + (n_slots + gather_slot[k]) * kFusedSlotBytes;
          gather(p, copies[k], b, n, dst);
          ptr[k] = dst;
          stride[k] = 1;
        } else {
          ptr[k] = p.base + b * p.stride * p.elem;
          stride[k] = p.stride;
        }
      }
      runner.run_block(ptr.data(), stride.data(), out_base + b * out_elem, n, slots);
    }
  });
}

}  // namespace

void register_fused_kernels() {
  for (DType d : kAllDTypes)
    register_kernel(OpId::k_fused_elementwise, kCpuBackend, d, &fused_kernel);
}

}  // namespace spore::cpu
