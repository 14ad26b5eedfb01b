// ONNX If and Loop onto the mapping itself (NOTE [ONNX dynamic shapes]): an If whose condition is
// known when the graph is mapped (an initializer or Constant, or a small value computed from
// predict's inputs, which then re-maps when those values change) is replaced by the nodes of the
// branch it takes; one whose condition is computed from large values becomes an if_else node that
// runs the chosen branch at run time (onnx_map_if_node.cc, NOTE [Lite control flow]); a Loop whose trip count and condition are known is unrolled (at most
// 4,096 iterations), and so is a Scan over its scan axis. A Loop whose condition is computed from
// large values becomes a while_loop node (onnx_map_loop_node.cc, NOTE [ONNX Loop at run time]).
#include <algorithm>
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> if_op(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t id = c.at(0);
  const bool known_now_or_at_predict = m.is_constant(id) || m.g.values[id].kind == ir::ValueKind::kInput || m.known.count(id) ||
                                       m.derivable.count(id);
  if (!known_now_or_at_predict) return if_at_run_time(c, id);
  const Tensor& cond = m.data(c, c.at(0), "condition (Lite runs an If whose condition is known when the graph is mapped)");
  if (cond.numel() != 1) c.bad("the condition must hold one element");
  const bool then = cond.contiguous().to(DType::kFloat64).to_vector<double>()[0] != 0;
  const char* branch = then ? "then_branch" : "else_branch";
  const AttributeProto* a = find_attr(c.node, branch);
  if (!a || a->type() != AttributeProto::GRAPH) c.bad(std::string(branch) + " is missing or not a graph");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("If branches nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const GraphProto& g = a->g();
  // The branch sees the outer names; its own are dropped after it (they are local to it).
  const std::map<std::string, uint32_t> outer = m.names;
  ++m.depth;
  for (int k = 0; k < g.initializer_size(); ++k) {
    const TensorProto& t = g.initializer(k);
    if (m.names.count(t.name())) c.bad(std::string(branch) + " initializer '" + t.name() + "' is already defined");
    m.names[t.name()] = m.constant(tensor_of(t, c.where + " " + branch + " initializer '" + t.name() + "'"));
  }
  map_nodes(m, g, c.where + " " + branch);
  std::vector<uint32_t> outs;
  for (const auto& o : g.output()) {
    auto it = m.names.find(o.name());
    if (it == m.names.end()) c.bad(std::string(branch) + " output '" + o.name() + "' is made by no node");
    outs.push_back(it->second);
  }
  --m.depth;
  m.names = outer;
  if ((int)outs.size() != c.node.output_size())
    c.bad(std::string(branch) + " has " + std::to_string(outs.size()) + " outputs; the If has " + std::to_string(c.node.output_size()));
  return outs;
}

// More iterations than this would unroll into a graph too large to plan: refused.
constexpr int64_t kMaxIterations = 4096;

// The one-element value of input k as a number, known when the graph is mapped.
double scalar_of(NodeCtx& c, uint32_t id, const char* what) {
  const Tensor& t = c.m.data(c, id, what);
  if (t.numel() != 1) c.bad(std::string(what) + " must hold one element");
  return t.contiguous().to(DType::kFloat64).to_vector<double>()[0];
}

// Loop, unrolled: each iteration maps the body with its inputs bound to the iteration number, the
// condition and the loop-carried values, while the trip count and the condition (both known when
// the graph is mapped) allow; scan outputs are stacked on a new first axis.
std::vector<uint32_t> loop_op(NodeCtx& c) {
  Mapper& m = c.m;
  const AttributeProto* a = find_attr(c.node, "body");
  if (!a || a->type() != AttributeProto::GRAPH) c.bad("body is missing or not a graph");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("subgraphs nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const GraphProto& body = a->g();
  const int carried = (int)c.in.size() - 2;
  if (carried < 0) c.bad("Loop takes a trip count and a condition (either may be empty)");
  if (body.input_size() != carried + 2 || body.output_size() < carried + 1)
    c.bad("the body has " + std::to_string(body.input_size()) + " inputs and " + std::to_string(body.output_size()) + " outputs for " +
          std::to_string(carried) + " loop-carried values");
  const int scans = body.output_size() - 1 - carried;
  if (c.node.output_size() != carried + scans) c.bad("the Loop's outputs do not match its body's");
  // A trip count or condition that only the run computes: the body runs as a while_loop node.
  auto at_run_time = [&](uint32_t id) {
    return !m.is_constant(id) && !m.known.count(id) && !m.derivable.count(id) && m.g.values[id].kind != ir::ValueKind::kInput;
  };
  std::vector<uint32_t> values(c.in.begin() + 2, c.in.end());
  for (uint32_t v : values)
    if (v == kNone) c.bad("a loop-carried initial value is missing");
  if ((c.given(0) && at_run_time(c.in[0])) || (c.given(1) && at_run_time(c.in[1])))
    return loop_at_run_time(c, 0, c.given(1) ? c.in[1] : kNone, values);
  // Otherwise unrolled while the condition the body computes is known; from the first iteration
  // whose condition only the run knows, the rest runs as a while_loop node from the state reached
  // (which also settles loop-carried values whose initial value is a placeholder of another
  // shape, as Paddle exports write them).
  const bool counted = c.given(0);
  const double trips = counted ? scalar_of(c, c.in[0], "trip count") : INFINITY;
  bool go = c.given(1) ? scalar_of(c, c.in[1], "condition") != 0 : true;
  if (!counted && !c.given(1)) c.unsupported("a Loop with neither a trip count nor a condition (it never ends)");
  if (trips > (double)kMaxIterations && !c.given(1))
    c.unsupported("a Loop of " + std::to_string(trips) + " iterations (unrolled: at most " + std::to_string(kMaxIterations) + ")");
  std::vector<std::vector<uint32_t>> scanned((size_t)scans);
  const std::map<std::string, uint32_t> outer = m.names;
  ++m.depth;
  int64_t i = 0;
  for (; go && (double)i < trips; ++i) {
    if (i >= kMaxIterations) c.unsupported("a Loop of over " + std::to_string(kMaxIterations) + " iterations (unrolled)");
    if (++m.unrolled > kMaxUnrolled) c.unsupported("loops unrolling to over " + std::to_string(kMaxUnrolled) + " iterations in all (nested loops multiply)");
    m.names = outer;
    m.names[body.input(0).name()] = m.constant_of(std::vector<int64_t>{i}, Shape{});
    m.names[body.input(1).name()] = m.constant(Tensor::from_vector(std::vector<uint8_t>{go ? uint8_t{1} : uint8_t{0}}, Shape{}).to(DType::kBool));
    for (int k = 0; k < carried; ++k) m.names[body.input(k + 2).name()] = values[(size_t)k];
    for (int k = 0; k < body.initializer_size(); ++k)
      m.names[body.initializer(k).name()] = m.constant(tensor_of(body.initializer(k), c.where + " body initializer"));
    map_nodes(m, body, c.where + " body (iteration " + std::to_string(i) + ")");
    std::vector<uint32_t> outs;
    for (const auto& o : body.output()) {
      auto it = m.names.find(o.name());
      if (it == m.names.end()) c.bad("body output '" + o.name() + "' is made by no node");
      outs.push_back(it->second);
    }
    for (int k = 0; k < carried; ++k) values[(size_t)k] = outs[(size_t)k + 1];
    for (int k = 0; k < scans; ++k) scanned[(size_t)k].push_back(outs[(size_t)(1 + carried + k)]);
    if (!c.given(1)) continue;  // ONNX: the body's condition is ignored when the Loop has none
    if (at_run_time(outs[0])) {
      --m.depth;
      m.names = outer;
      if (scans > 0) c.unsupported("scan outputs of a Loop whose condition is computed at run time");
      return loop_at_run_time(c, i + 1, outs[0], values);
    }
    go = scalar_of(c, outs[0], "condition the body computes (Lite unrolls a Loop whose condition is known when the graph is mapped)") != 0;
  }
  --m.depth;
  m.names = outer;
  std::vector<uint32_t> result = values;
  for (auto& parts : scanned) {
    if (parts.empty()) c.unsupported("a scan output of a Loop that runs no iteration (its shape is unknown)");
    std::vector<uint32_t> lifted;
    for (uint32_t p : parts) {
      const Shape& s = m.shape(p);
      std::vector<int64_t> shape = {1};
      shape.insert(shape.end(), s.begin(), s.end());
      lifted.push_back(m.reshape(c, p, shape));
    }
    result.push_back(lifted.size() == 1 ? lifted[0] : m.emit(c, OpId::k_concat, lifted, Attrs::of(int64_t{0})));
  }
  // Loop-carried values that come out unchanged are copied (an output names its own value).
  for (uint32_t& r : result)
    if (r == kNone) c.bad("a Loop output has no value");
  return result;
}

// Scan (op set 9 on), unrolled over the scan axis, whose extent the shapes fix: iteration t
// maps the body with the states and each scan input's slice t (from the end for a reverse
// direction); scan outputs are stacked along their axis (prepended for a reverse direction).
// `states` and `inputs` are values without op set 8's batch axis.
std::vector<uint32_t> scan_unrolled(NodeCtx& c, const GraphProto& body, std::vector<uint32_t> states, const std::vector<uint32_t>& inputs,
                                    const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs,
                                    const std::vector<int64_t>& out_axes, const std::vector<int64_t>& out_dirs) {
  Mapper& m = c.m;
  const size_t n = states.size(), mi = inputs.size();
  if (body.input_size() != (int)(n + mi) || body.output_size() < (int)n)
    c.bad("the body has " + std::to_string(body.input_size()) + " inputs and " + std::to_string(body.output_size()) + " outputs for " +
          std::to_string(n) + " states and " + std::to_string(mi) + " scan inputs");
  const size_t k_out = (size_t)body.output_size() - n;
  if (mi == 0) c.bad("Scan needs at least one scan input (num_scan_inputs)");
  std::vector<int> axes(mi);
  int64_t length = -1;
  for (size_t j = 0; j < mi; ++j) {
    const Shape& s = m.shape(inputs[j]);
    axes[j] = normalize_axis(c, j < in_axes.size() ? in_axes[j] : 0, s.ndim());
    if (length >= 0 && s[axes[j]] != length) c.bad("the scan inputs differ in sequence length");
    length = s[axes[j]];
  }
  if (length > kMaxIterations) c.unsupported("a Scan of " + std::to_string(length) + " iterations (unrolled: at most " + std::to_string(kMaxIterations) + ")");
  if (length == 0 && k_out > 0) c.unsupported("scan outputs of a Scan over an empty sequence (their shape is unknown)");
  std::vector<std::vector<uint32_t>> scanned(k_out);
  const std::map<std::string, uint32_t> outer = m.names;
  ++m.depth;
  for (int64_t t = 0; t < length; ++t) {
    if (++m.unrolled > kMaxUnrolled) c.unsupported("loops unrolling to over " + std::to_string(kMaxUnrolled) + " iterations in all (nested loops multiply)");
    m.names = outer;
    for (size_t k = 0; k < n; ++k) m.names[body.input((int)k).name()] = states[k];
    for (size_t j = 0; j < mi; ++j) {
      const Shape s = m.shape(inputs[j]);
      const int64_t at = j < in_dirs.size() && in_dirs[j] ? length - 1 - t : t;
      std::vector<int64_t> shape(s.begin(), s.end());
      shape.erase(shape.begin() + axes[j]);
      const uint32_t cell = m.emit(c, OpId::k_slice, {inputs[j]}, Attrs::of((int64_t)axes[j], at, at + 1, int64_t{1}));
      m.names[body.input((int)(n + j)).name()] = m.reshape(c, cell, shape);
    }
    for (int k = 0; k < body.initializer_size(); ++k)
      m.names[body.initializer(k).name()] = m.constant(tensor_of(body.initializer(k), c.where + " body initializer"));
    map_nodes(m, body, c.where + " body (iteration " + std::to_string(t) + ")");
    for (int o = 0; o < body.output_size(); ++o) {
      auto it = m.names.find(body.output(o).name());
      if (it == m.names.end()) c.bad("body output '" + body.output(o).name() + "' is made by no node");
      if ((size_t)o < n) states[(size_t)o] = it->second;
      else scanned[(size_t)o - n].push_back(it->second);
    }
  }
  --m.depth;
  m.names = outer;
  std::vector<uint32_t> result;
  for (uint32_t s : states) result.push_back(std::count(c.in.begin(), c.in.end(), s) ? m.emit(c, OpId::k_copy, {s}) : s);
  for (size_t k = 0; k < k_out; ++k) {
    auto& parts = scanned[k];
    if (k < out_dirs.size() && out_dirs[k]) std::reverse(parts.begin(), parts.end());
    const int rank = m.shape(parts[0]).ndim() + 1;
    const int axis = normalize_axis(c, k < out_axes.size() ? out_axes[k] : 0, rank);
    std::vector<uint32_t> lifted;
    for (uint32_t p : parts) {
      const Shape& s = m.shape(p);
      std::vector<int64_t> shape(s.begin(), s.end());
      shape.insert(shape.begin() + axis, 1);
      lifted.push_back(m.reshape(c, p, shape));
    }
    result.push_back(lifted.size() == 1 ? lifted[0] : m.emit(c, OpId::k_concat, lifted, Attrs::of((int64_t)axis)));
  }
  return result;
}

std::vector<uint32_t> scan_op(NodeCtx& c) {
  Mapper& m = c.m;
  const AttributeProto* a = find_attr(c.node, "body");
  if (!a || a->type() != AttributeProto::GRAPH) c.bad("body is missing or not a graph");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("subgraphs nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const int64_t mi = c.i("num_scan_inputs", 0);
  const size_t first = m.opset >= 9 ? 0 : 1;  // op set 8: sequence_lens comes first
  if (mi <= 0 || (size_t)mi > c.in.size() - first) c.bad("num_scan_inputs " + std::to_string(mi) + " does not fit the inputs");
  const size_t n = c.in.size() - first - (size_t)mi;
  std::vector<uint32_t> states, inputs;
  for (size_t k = first; k < c.in.size(); ++k) (k < first + n ? states : inputs).push_back(c.at(k));
  if (m.opset >= 9)
    return scan_unrolled(c, a->g(), states, inputs, c.ints("scan_input_axes"), c.ints("scan_input_directions"), c.ints("scan_output_axes"),
                         c.ints("scan_output_directions"));
  // Op set 8: every value has a batch axis first (the scan axis is 1); each batch entry is scanned
  // on its own and the results stacked again. Sequences shorter than the scan axis are not mapped.
  const int64_t batch = m.shape(inputs[0])[0];
  for (uint32_t v : states)
    if (m.shape(v).ndim() < 1 || m.shape(v)[0] != batch) c.bad("op set 8 Scan: every state needs the batch axis first");
  for (uint32_t v : inputs)
    if (m.shape(v).ndim() < 2 || m.shape(v)[0] != batch) c.bad("op set 8 Scan: every scan input needs [batch, sequence, ...]");
  if (c.given(0)) {
    for (int64_t len : m.int_data(c, c.in[0], "sequence_lens"))
      if (len != m.shape(inputs[0])[1]) c.unsupported("an op set 8 Scan over sequences shorter than the scan axis");
  }
  if (batch > kMaxIterations) c.unsupported("an op set 8 Scan over a batch of " + std::to_string(batch));
  std::vector<std::vector<uint32_t>> per_batch;
  auto entry = [&](uint32_t v, int64_t b) {
    const Shape s = m.shape(v);
    std::vector<int64_t> shape(s.begin() + 1, s.end());
    return m.reshape(c, m.emit(c, OpId::k_slice, {v}, Attrs::of(int64_t{0}, b, b + 1, int64_t{1})), shape);
  };
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<uint32_t> sb, ib;
    for (uint32_t v : states) sb.push_back(entry(v, b));
    for (uint32_t v : inputs) ib.push_back(entry(v, b));
    per_batch.push_back(scan_unrolled(c, a->g(), sb, ib, {}, c.ints("directions"), {}, {}));
  }
  std::vector<uint32_t> result;
  for (size_t o = 0; batch > 0 && o < per_batch[0].size(); ++o) {
    std::vector<uint32_t> lifted;
    for (const auto& outs : per_batch) {
      const Shape& s = m.shape(outs[o]);
      std::vector<int64_t> shape = {1};
      shape.insert(shape.end(), s.begin(), s.end());
      lifted.push_back(m.reshape(c, outs[o], shape));
    }
    result.push_back(lifted.size() == 1 ? lifted[0] : m.emit(c, OpId::k_concat, lifted, Attrs::of(int64_t{0})));
  }
  if (batch == 0) c.unsupported("an op set 8 Scan over an empty batch");
  return result;
}

// Optional values: Lite's values are tensors, so an optional here is a tensor that is present, or
// an omitted input (an optional-typed graph input is refused where the inputs are read).
std::vector<uint32_t> optional_has_element(NodeCtx& c) {
  return {c.m.constant(Tensor::from_vector(std::vector<uint8_t>{c.given(0) ? uint8_t{1} : uint8_t{0}}, Shape{}).to(DType::kBool))};
}
std::vector<uint32_t> optional_get_element(NodeCtx& c) {
  if (!c.given(0)) c.bad("OptionalGetElement of an empty optional");
  return {c.m.emit(c, OpId::k_copy, {c.at(0)})};
}

}  // namespace

void add_control_ops(HandlerTable& t) {
  t["OptionalHasElement"] = optional_has_element;
  t["OptionalGetElement"] = optional_get_element;
  t["If"] = if_op;
  t["Loop"] = loop_op;
  t["Scan"] = scan_op;
}

}  // namespace spore::onnx::detail
