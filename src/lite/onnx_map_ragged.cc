// Outputs whose extent only the run knows (NOTE [Ragged outputs]): an ONNX Slice in the model's own
// graph that ends at a value computed at run time (a table decoder's step count from its Loop) is
// taken at its largest extent, with the length the run computes beside it; the ops that act on each
// position of that axis alone may follow it (Softmax over another axis, elementwise unary ops), and
// a graph output reached that way is narrowed by Lite after the run.
#include <algorithm>
#include <set>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {

bool ragged_slice_applies(NodeCtx& c) {
  Mapper& m = c.m;
  if (m.depth != 0 || m.opset < 10 || c.in.size() < 3 || !c.given(1) || !c.given(2)) return false;
  auto known = [&](uint32_t id) { return m.is_constant(id) || m.known.count(id); };
  auto run_time = [&](uint32_t id) {
    return !known(id) && !m.derivable.count(id) && !m.unknowable.count(id) && m.g.values[id].kind != ir::ValueKind::kInput;
  };
  return known(c.in[1]) && run_time(c.in[2]) && (!c.given(3) || known(c.in[3])) && (!c.given(4) || known(c.in[4]));
}

std::vector<uint32_t> ragged_slice(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape s = m.shape(x);
  const std::vector<int64_t> starts = m.int_data(c, c.in[1], "starts");
  std::vector<int64_t> axes = c.given(3) ? m.int_data(c, c.in[3], "axes") : std::vector<int64_t>{};
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back((int64_t)k);
  if (c.given(4))
    for (int64_t st : m.int_data(c, c.in[4], "steps"))
      if (st != 1) c.unsupported("a Slice with steps other than 1 that ends at a value computed at run time");
  if (starts.size() != 1 || axes.size() != 1 || m.shape(c.in[2]).numel() != 1)
    c.unsupported("a Slice over several axes that ends at a value computed at run time");
  if (m.ragged.count(x)) c.unsupported("a Slice of a value whose extent only the run knows");
  const int axis = normalize_axis(c, axes[0], s.ndim());
  const int64_t n = s[axis];
  const int64_t begin = std::clamp<int64_t>(starts[0] < 0 ? starts[0] + n : starts[0], 0, n);
  // The length the run computes: ONNX's clamped end minus the start, at least 0.
  uint32_t end = m.reshape(c, m.cast_to(c, c.in[2], DType::kInt64), {});
  const uint32_t negative = m.emit(c, OpId::k_lt, {end, m.scalar(0, DType::kInt64)});
  end = m.emit(c, OpId::k_where, {negative, m.emit(c, OpId::k_add, {end, m.scalar((double)n, DType::kInt64)}), end});
  end = m.emit(c, OpId::k_minimum, {m.emit(c, OpId::k_maximum, {end, m.scalar(0, DType::kInt64)}), m.scalar((double)n, DType::kInt64)});
  const uint32_t length =
      m.emit(c, OpId::k_maximum, {m.emit(c, OpId::k_sub, {end, m.scalar((double)begin, DType::kInt64)}), m.scalar(0, DType::kInt64)});
  const uint32_t y = m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, begin, n, int64_t{1}));
  m.ragged[y] = {axis, length};
  return {y};
}

void check_ragged_reader(NodeCtx& c) {
  Mapper& m = c.m;
  int ragged_axis = -1;
  size_t readers = 0;
  for (uint32_t id : c.in)
    if (id != kNone && m.ragged.count(id)) {
      ragged_axis = m.ragged.at(id).first;
      ++readers;
    }
  if (!readers) return;
  static const std::set<std::string> unary = {"Identity", "Cast", "Sigmoid", "Tanh", "Relu", "Exp", "Abs", "Neg", "Log", "Sqrt"};
  const std::string& op = c.node.op_type();
  bool fine = readers == 1 && c.in.size() == 1 && unary.count(op);
  if (readers == 1 && c.in.size() == 1 && (op == "Softmax" || op == "LogSoftmax")) {
    const int rank = m.shape(c.in[0]).ndim();
    const int axis = normalize_axis(c, c.i("axis", m.opset >= 13 ? -1 : 1), rank);
    // Op set 13 normalises along one axis; earlier ones over every axis from `axis` on.
    fine = m.opset >= 13 ? axis != ragged_axis : ragged_axis < axis;
  }
  if (!fine)
    c.unsupported("reading a value whose extent only the run knows (a Slice ending at a computed value) with " + op +
                  " (Lite follows it only through ops that treat each position of that axis alone)");
}

void mark_ragged_results(NodeCtx& c, const std::vector<uint32_t>& outs) {
  for (uint32_t id : c.in)
    if (id != kNone && c.m.ragged.count(id)) {
      for (uint32_t o : outs) c.m.ragged[o] = c.m.ragged.at(id);
      return;
    }
}

void refuse_ragged_operand(NodeCtx& c, uint32_t id) {
  if (c.m.ragged.count(id)) c.unsupported("a subgraph reading a value whose extent only the run knows");
}

}  // namespace spore::onnx::detail
