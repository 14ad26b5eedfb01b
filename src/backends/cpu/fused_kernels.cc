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
#include "ops/fused_program.h"
#include "spore/error.h"

namespace spore::cpu {

namespace {

// 2048 elements: a float32 slot is 8 KiB, so a few live intermediates stay in L1 and a dozen in
// L2, while the loop calls per block stay few (512 measured ~10 % slower on a*b+c); a multiple
// of every vector width, so the loops' scalar tails only run at the end of the whole output, as
// in the standalone kernels.
constexpr int64_t kFusedBlock = 2048;
constexpr int64_t kSlotBytes = kFusedBlock * 8;  // the widest dtype

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

// Each instruction's scratch slot, reusing a slot once its value has no later reader.
std::vector<int> assign_slots(const ops::FusedProgram& p, int& num_slots) {
  const int n = (int)p.instrs.size();
  std::vector<int> last_use(n, -1), slot(n, -1), free_slots;
  for (int i = 0; i < n; ++i)
    for (int a = 0; a < p.instrs[i].num_args; ++a)
      if (p.instrs[i].args[a] < 0) last_use[ops::fused_temp_index(p.instrs[i].args[a])] = i;
  num_slots = 0;
  for (int i = 0; i + 1 < n; ++i) {  // the last instruction writes the output
    // The result never shares a slot with this instruction's own operands (a widening cast
    // would overwrite elements it has not read yet); their slots free up after it.
    if (free_slots.empty()) {
      slot[i] = num_slots++;
    } else {
      slot[i] = free_slots.back();
      free_slots.pop_back();
    }
    const ops::FusedInstr& ins = p.instrs[i];
    for (int a = 0; a < ins.num_args; ++a) {
      if (ins.args[a] >= 0) continue;
      const int k = ops::fused_temp_index(ins.args[a]);
      const bool seen =
          std::find(ins.args, ins.args + a, ins.args[a]) != ins.args + a;  // mul $0 $0
      if (last_use[k] == i && !seen) free_slots.push_back(slot[k]);
    }
  }
  return slot;
}

// This thread's scratch of at least `bytes`, 64-byte aligned and uninitialised (zeroing it per
// chunk would cost a tenth of a memory-bound kernel's time); kept for the thread's life.
char* scratch(int64_t bytes) {
  struct Buffer {
    char* data = nullptr;
    int64_t size = 0;
    ~Buffer() { ::operator delete[](data, std::align_val_t{64}); }
  };
  thread_local Buffer buf;
  if (buf.size < bytes) {
    ::operator delete[](buf.data, std::align_val_t{64});
    buf.data = static_cast<char*>(::operator new[]((size_t)bytes, std::align_val_t{64}));
    buf.size = bytes;
  }
  return buf.data;
}

[[noreturn]] void no_loop(const ops::FusedInstr& ins, int i) {
  throw Error(ErrorCode::kUnsupported, std::string("fused_elementwise: instruction ") +
                                           std::to_string(i) + " (" + op_def(ins.op).name +
                                           ") has no CPU loop for " + dtype_name(ins.compute));
}

void fused_kernel(const KernelCall& c) {
  ops::FusedProgram prog = ops::parse_fused_program(c.attrs.s(0));
  std::vector<DType> dtypes;
  for (const Tensor& t : c.inputs) dtypes.push_back(t.dtype());
  ops::type_fused_program(prog, dtypes);

  const ew::LoopTable& t = ew::loops();
  const int n_instr = (int)prog.instrs.size();
  // Resolve every instruction's loop once, before any thread starts.
  struct Step {
    ew::BinaryLoop binary = nullptr;
    ew::UnaryLoop unary = nullptr;
    ew::WhereLoop where = nullptr;
    ew::CastLoop cast = nullptr;
  };
  std::vector<Step> steps(n_instr);
  for (int i = 0; i < n_instr; ++i) {
    const ops::FusedInstr& ins = prog.instrs[i];
    Step& s = steps[i];
    if (ins.op == OpId::k_where)
      s.where = t.where[(int)ins.compute];
    else if (ins.op == OpId::k_cast)
      s.cast = t.cast[(int)ins.compute][(int)ins.cast_to];
    else if (ins.num_args == 2)
      s.binary = t.binary[(int)ins.op][(int)ins.compute];
    else
      s.unary = t.unary[(int)ins.op][(int)ins.compute];
    if (!s.binary && !s.unary && !s.where && !s.cast) no_loop(ins, i);
  }

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
  int n_slots = 0;
  const std::vector<int> slot = assign_slots(prog, n_slots);
  char* out_base = static_cast<char*>(out.data_ptr());
  const int64_t out_elem = (int64_t)out.itemsize();
  const int64_t total_slots = n_slots + n_gathered;

  run_flat(shape.numel(), [&](int64_t chunk_begin, int64_t chunk_end) {
    char* slots = scratch(total_slots * kSlotBytes);
    std::vector<const char*> ptr(c.inputs.size());
    std::vector<int64_t> stride(c.inputs.size());
    for (int64_t b = chunk_begin; b < chunk_end; b += kFusedBlock) {
      const int64_t n = std::min(kFusedBlock, chunk_end - b);
      for (size_t k = 0; k < inputs.size(); ++k) {
        const InputPlan& p = inputs[k];
        if (p.gathered) {
          char* dst = slots + (n_slots + gather_slot[k]) * kSlotBytes;
          gather(p, copies[k], b, n, dst);
          ptr[k] = dst;
          stride[k] = 1;
        } else {
          ptr[k] = p.base + b * p.stride * p.elem;
          stride[k] = p.stride;
        }
      }
      auto operand = [&](int32_t arg, int64_t& s) -> const void* {
        if (arg >= 0) {
          s = stride[arg];
          return ptr[arg];
        }
        s = 1;
        return slots + slot[ops::fused_temp_index(arg)] * kSlotBytes;
      };
      for (int i = 0; i < n_instr; ++i) {
        const ops::FusedInstr& ins = prog.instrs[i];
        void* dst = i + 1 == n_instr ? out_base + b * out_elem : slots + slot[i] * kSlotBytes;
        int64_t s0 = 0, s1 = 0, s2 = 0;
        const Step& st = steps[i];
        if (st.binary) {
          const void* a0 = operand(ins.args[0], s0);
          const void* a1 = operand(ins.args[1], s1);
          st.binary(a0, s0, a1, s1, dst, n);
        } else if (st.unary) {
          const void* a0 = operand(ins.args[0], s0);
          st.unary(a0, s0, dst, n);
        } else if (st.where) {
          const void* a0 = operand(ins.args[0], s0);
          const void* a1 = operand(ins.args[1], s1);
          const void* a2 = operand(ins.args[2], s2);
          st.where(a0, s0, a1, s1, a2, s2, dst, n);
        } else {
          const void* a0 = operand(ins.args[0], s0);
          st.cast(a0, s0, dst, 1, n);
        }
      }
    }
  });
}

}  // namespace

void register_fused_kernels() {
  for (DType d : kAllDTypes)
    register_kernel(OpId::k_fused_elementwise, kCpuBackend, d, &fused_kernel);
}

}  // namespace spore::cpu
