// FusedRunner (fused_runner.h): a typed fused program's loops and scratch slots, resolved once
// per call, run block by block.
#include "fused_runner.h"

#include <algorithm>
#include <new>
#include <string>

#include "spore/error.h"

namespace spore::cpu {

namespace {

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

[[noreturn]] void no_loop(const ops::FusedInstr& ins, int i) {
  throw Error(ErrorCode::kUnsupported, std::string("fused_elementwise: instruction ") +
                                           std::to_string(i) + " (" + op_def(ins.op).name +
                                           ") has no CPU loop for " + dtype_name(ins.compute));
}

}  // namespace

FusedRunner::FusedRunner(ops::FusedProgram program) : program_(std::move(program)) {
  const ew::LoopTable& t = ew::loops();
  const int n = (int)program_.instrs.size();
  steps_.resize((size_t)n);
  for (int i = 0; i < n; ++i) {
    const ops::FusedInstr& ins = program_.instrs[(size_t)i];
    Step& s = steps_[(size_t)i];
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
  slot_ = assign_slots(program_, num_slots_);
}

void FusedRunner::run_block(const char* const* ptr, const int64_t* stride, void* dst, int64_t n, char* slots) const {
  auto operand = [&](int32_t arg, int64_t& s) -> const void* {
    if (arg >= 0) {
      s = stride[arg];
      return ptr[arg];
    }
    s = 1;
    return slots + slot_[(size_t)ops::fused_temp_index(arg)] * kFusedSlotBytes;
  };
  const int n_instr = (int)program_.instrs.size();
  for (int i = 0; i < n_instr; ++i) {
    const ops::FusedInstr& ins = program_.instrs[(size_t)i];
    void* out = i + 1 == n_instr ? dst : slots + slot_[(size_t)i] * kFusedSlotBytes;
    int64_t s0 = 0, s1 = 0, s2 = 0;
    const Step& st = steps_[(size_t)i];
    if (st.binary) {
      const void* a0 = operand(ins.args[0], s0);
      const void* a1 = operand(ins.args[1], s1);
      st.binary(a0, s0, a1, s1, out, n);
    } else if (st.unary) {
      const void* a0 = operand(ins.args[0], s0);  // sets s0: not in the same call's arguments
      st.unary(a0, s0, out, n);
    } else if (st.where) {
      const void* a0 = operand(ins.args[0], s0);
      const void* a1 = operand(ins.args[1], s1);
      const void* a2 = operand(ins.args[2], s2);
      st.where(a0, s0, a1, s1, a2, s2, out, n);
    } else {
      const void* a0 = operand(ins.args[0], s0);
      st.cast(a0, s0, out, 1, n);
    }
  }
}

char* fused_scratch(int64_t bytes) {
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

}  // namespace spore::cpu
