// An ONNX Loop whose condition is computed at run time (NOTE [ONNX Loop at run time]): the body is
// mapped once into a closed graph and the Loop becomes one `while_loop` node, which the graph
// library's loop runner runs until the condition (and the trip count) end it.
//
// The node's state is (iteration number, condition, the loop-carried values the body changes);
// its inputs after the state are the outer values the body reads (those the mapping knows now
// are copied into the body as constants instead), the values the body passes through unchanged
// (model weights that a Paddle export threads through the loop) and a trip count computed at run
// time. The condition subgraph is `iteration < trip count and condition`, built here; the body
// subgraph is the ONNX body followed by `iteration + 1`.
#include <algorithm>
#include <cmath>
#include <set>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {

namespace {

// The while_loop's condition subgraph: it takes the node's inputs and returns one bool element,
// `state[1]`, and `state[0] < trip count` when the Loop has one (`trips_at`: its input, or -1 with
// `trips` its known value; neither when the Loop has no trip count).
ir::Graph condition_graph(NodeCtx& c, const std::vector<uint32_t>& operands, int trips_at, const Tensor& trips) {
  Mapper& m = c.m;
  Mapper q;
  q.label = m.label;
  q.opset = m.opset;
  std::vector<uint32_t> ins;
  for (uint32_t v : operands) {
    const uint32_t id = q.push({"", ir::ValueKind::kInput, m.dtype(v), Mapper::dims_of(m.shape(v)), Tensor()},
                               Mapper::placeholder(m.shape(v), m.dtype(v)));
    q.g.inputs.push_back(id);
    ins.push_back(id);
  }
  NodeCtx qc{q, c.node, {}, c.where + " (the loop's condition)"};
  uint32_t go = q.reshape(qc, ins[1], {});
  if (trips_at >= 0 || trips.defined()) {
    uint32_t limit = trips_at >= 0 ? ins[(size_t)trips_at] : q.constant(trips);
    limit = q.reshape(qc, q.cast_to(qc, limit, DType::kInt64), {});
    go = q.emit(qc, OpId::k_logical_and, {q.emit(qc, OpId::k_lt, {ins[0], limit}), go});
  } else {
    go = q.emit(qc, OpId::k_copy, {go});
  }
  q.g.outputs.push_back(go);
  return std::move(q.g);
}

}  // namespace

std::vector<uint32_t> loop_at_run_time(NodeCtx& c, int64_t first, uint32_t cond, const std::vector<uint32_t>& values) {
  Mapper& m = c.m;
  const GraphProto& body = find_attr(c.node, "body")->g();  // loop_op checked it and the arities
  for (uint32_t v : values)
    if (const Carried* ct = carried_of(m, v)) c.unsupported(std::string("a loop-carried value of the carried type ") + ct->name + " in a Loop run at run time");
  const int carried = (int)c.in.size() - 2;
  if (body.output_size() > carried + 1)
    c.unsupported("scan outputs of a Loop whose condition is computed at run time (Lite plans one shape per value; their "
                  "length is known only after the run)");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("subgraphs nested over " + std::to_string(kMaxSubgraphDepth) + " deep");

  // The state: the iteration number, the condition (true when the Loop has none: its body's
  // condition is then ignored, ONNX's "for" form), and the loop-carried values the body changes.
  const bool has_cond = cond != kNone;
  uint32_t cond0 = has_cond ? m.cast_to(c, cond, DType::kBool)
                            : m.constant(Tensor::from_vector(std::vector<uint8_t>{1}, Shape{}).to(DType::kBool));
  if (m.shape(cond0).numel() != 1) c.bad("the condition must hold one element");
  // Each state entry's value at the loop's entry, when the mapping knows it (Mapper::hints).
  auto entry = [&](uint32_t v) {
    const Tensor* t = m.hinted(v);
    return t && t->numel() <= kMaxKnownElements ? *t : Tensor();
  };
  std::vector<ClosedInput> leading = {{body.input(0).name(), DType::kInt64, Shape{}, Tensor::from_vector(std::vector<int64_t>{first}, Shape{})},
                                      {body.input(1).name(), DType::kBool, m.shape(cond0), entry(cond0)}};
  std::vector<uint32_t> operands = {m.constant_of(std::vector<int64_t>{first}, Shape{}), cond0};
  std::vector<int> changing;  // carried value k, in state order
  std::vector<std::string> names;
  std::vector<uint32_t> outer;
  std::set<std::string> skip, seen;
  for (int k = 0; k < carried; ++k) {
    const uint32_t v = values[(size_t)k];
    const std::string& name = body.input(k + 2).name();
    if (body.output(k + 1).name() == name) {  // passed through unchanged: an outer value to the body
      if (!seen.insert(name).second) c.bad("the body's input '" + name + "' is named twice");
      names.push_back(name);
      outer.push_back(v);
      skip.insert(name);
      continue;
    }
    refuse_ragged_operand(c, v);
    changing.push_back(k);
    leading.push_back({name, m.dtype(v), m.shape(v), entry(v)});
    operands.push_back(v);
  }
  // The outer values the body reads, and a trip count that is not known now (the condition
  // subgraph reads it; the body takes it too, since both subgraphs take the node's inputs).
  free_names(body, {}, names, seen);
  static const std::string kTrips = "\x01trip count";  // no ONNX name: the body never reads it
  int trips_at = -1;
  Tensor trips;
  if (c.given(0)) {
    if (m.shape(c.in[0]).numel() != 1) c.bad("the trip count must hold one element");
    if (m.is_constant(c.in[0]) || m.known.count(c.in[0])) trips = m.data(c, c.in[0], "trip count");
    else {
      names.push_back(kTrips);
      seen.insert(kTrips);
    }
  }
  std::vector<bool> passed;
  for (size_t k = 0; k < names.size(); ++k) {
    if (k >= outer.size()) {  // a name the body reads from outside
      auto it = m.names.find(names[k]);
      if (names[k] != kTrips && it == m.names.end()) c.bad("the body reads '" + names[k] + "', which nothing outside it makes");
      outer.push_back(names[k] == kTrips ? c.in[0] : it->second);
    }
    const uint32_t id = outer[k];
    refuse_ragged_operand(c, id);
    const bool inline_value = m.is_constant(id) || m.known.count(id);
    passed.push_back(!inline_value);
    if (inline_value) continue;
    if (names[k] == kTrips) trips_at = (int)operands.size();
    operands.push_back(id);
  }

  // The body: the ONNX body's condition and changed values, after `iteration + 1`.
  const std::vector<ClosedInput> state = leading;
  auto finish = [&](NodeCtx& bc, std::vector<uint32_t> results) {
    Mapper& s = bc.m;
    const uint32_t iter = s.names.at(state[0].name);
    std::vector<uint32_t> next = {s.emit(bc, OpId::k_add, {iter, s.constant_of(std::vector<int64_t>{1}, Shape{})})};
    uint32_t go = s.names.at(state[1].name);
    if (has_cond) {
      go = s.cast_to(bc, results[0], DType::kBool);
      if (s.shape(go).numel() != 1) bc.bad("the body's condition must hold one element");
      std::vector<int64_t> shape(state[1].shape.begin(), state[1].shape.end());
      go = s.reshape(bc, go, shape);
    }
    next.push_back(go);
    for (size_t k = 1; k < results.size(); ++k) {
      const ClosedInput& want = state[k + 1];
      if (s.dtype(results[k]) != want.dtype || s.shape(results[k]) != want.shape)
        bc.unsupported("a Loop whose loop-carried value '" + want.name + "' changes from " + dtype_name(want.dtype) +
                       want.shape.str() + " to " + dtype_name(s.dtype(results[k])) + s.shape(results[k]).str() +
                       " in an iteration (Lite plans one shape per value)");
      next.push_back(results[k]);
    }
    // After the state, the checks of the extents planned from the entry values (LoopRunner runs them).
    for (uint32_t check : s.checks) next.push_back(s.reshape(bc, s.cast_to(bc, check, DType::kBool), {}));
    return next;
  };
  ir::Graph body_g = map_closed(c, body, "body", leading, names, outer, passed, skip, finish);
  ir::Graph cond_g = condition_graph(c, operands, trips_at, trips);

  const OpDef& def = op_def(OpId::k_while_loop);
  const Attrs attrs = Attrs::of((int64_t)leading.size(), int64_t{0});
  const std::vector<uint32_t> outs = m.add_control_node(c.where, def, operands, attrs);
  m.g.nodes.back().subgraphs.push_back(std::move(cond_g));
  m.g.nodes.back().subgraphs.push_back(std::move(body_g));
  // The Loop's outputs: each loop-carried value's last value (an unchanged one is its input).
  std::vector<uint32_t> result;
  size_t next = 2;
  for (int k = 0; k < carried; ++k)
    result.push_back(next - 2 < changing.size() && changing[next - 2] == k ? outs[next++] : values[(size_t)k]);
  return result;
}

// A Slice whose starts or ends change per iteration (a decoder writing step t of a buffer): planned
// with the extents the loop's entry values give, taken at run time with index_select from the
// clamped start, and checked in every iteration (the extent the run computes must be the planned
// one, else the loop fails with kValue rather than returning a wrongly shaped value).
std::vector<uint32_t> slice_per_iteration(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t x = c.at(0);
  const Shape s = m.shape(x);
  const Tensor* starts_h = m.hinted(c.at(1));
  const Tensor* ends_h = m.hinted(c.at(2));
  if (!starts_h || !ends_h)
    c.unsupported("a Slice whose starts or ends change per Loop iteration from values not known at the loop's entry");
  const std::vector<int64_t> starts = starts_h->to(DType::kInt64).to_vector<int64_t>(), ends = ends_h->to(DType::kInt64).to_vector<int64_t>();
  std::vector<int64_t> axes, steps;
  if (c.given(3)) axes = m.int_data(c, c.in[3], "axes");
  if (c.given(4)) steps = m.int_data(c, c.in[4], "steps");
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back((int64_t)k);
  if (ends.size() != starts.size() || axes.size() != starts.size() || (!steps.empty() && steps.size() != starts.size()))
    c.bad("starts, ends, axes and steps differ in length");
  for (int64_t st : steps)
    if (st != 1) c.unsupported("a Slice with steps other than 1 whose starts or ends change per Loop iteration");
  const uint32_t starts_v = m.reshape(c, m.cast_to(c, c.at(1), DType::kInt64), {-1});
  const uint32_t ends_v = m.reshape(c, m.cast_to(c, c.at(2), DType::kInt64), {-1});
  for (size_t k = 0; k < starts.size(); ++k) {
    const int axis = normalize_axis(c, axes[k], s.ndim());
    const int64_t n = s[axis];
    // ONNX's rules for a positive step: a negative value counts from the end, then [0, n].
    auto clamp_now = [n](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + n : v, 0, n); };
    auto clamp_run = [&](uint32_t all) {
      const int64_t at = (int64_t)k;
      uint32_t v = m.reshape(c, m.emit(c, OpId::k_slice, {all}, Attrs::of(int64_t{0}, at, at + 1, int64_t{1})), {});
      const uint32_t negative = m.emit(c, OpId::k_lt, {v, m.scalar(0, DType::kInt64)});
      v = m.emit(c, OpId::k_where, {negative, m.emit(c, OpId::k_add, {v, m.scalar((double)n, DType::kInt64)}), v});
      v = m.emit(c, OpId::k_maximum, {v, m.scalar(0, DType::kInt64)});
      return m.emit(c, OpId::k_minimum, {v, m.scalar((double)n, DType::kInt64)});
    };
    const int64_t extent = std::max<int64_t>(0, clamp_now(ends[k]) - clamp_now(starts[k]));
    const uint32_t begin = clamp_run(starts_v), end = clamp_run(ends_v);
    const uint32_t got = m.emit(c, OpId::k_maximum, {m.emit(c, OpId::k_sub, {end, begin}), m.scalar(0, DType::kInt64)});
    m.checks.push_back(m.emit(c, OpId::k_eq, {got, m.scalar((double)extent, DType::kInt64)}));
    std::vector<int64_t> offsets((size_t)extent);
    for (int64_t i = 0; i < extent; ++i) offsets[(size_t)i] = i;
    const uint32_t index = m.emit(c, OpId::k_add, {m.reshape(c, begin, {1}), m.constant_of(offsets, Shape{extent})});
    x = m.emit(c, OpId::k_index_select, {x, index}, Attrs::of((int64_t)axis));
  }
  if (starts.empty()) x = m.emit(c, OpId::k_copy, {x});
  return {x};
}

// A Range whose start, limit or delta change per iteration: its length is planned from the entry
// values (a positive delta), the values computed at run time as start + i * delta, and the length
// checked in every iteration (start + (n - 1) delta < limit <= start + n delta).
std::vector<uint32_t> range_per_iteration(NodeCtx& c) {
  Mapper& m = c.m;
  double v[3];
  for (size_t k = 0; k < 3; ++k) {
    const Tensor* h = m.hinted(c.at(k));
    if (!h) c.unsupported("a Range whose start, limit or delta change per Loop iteration from values not known at the loop's entry");
    if (h->numel() != 1) c.bad("Range takes 0-d start, limit and delta");
    v[k] = h->to(DType::kFloat64).to_vector<double>()[0];
  }
  if (!(v[2] > 0)) c.unsupported("a Range with a delta that is not positive whose operands change per Loop iteration");
  const DType t = m.dtype(c.at(0));
  const int64_t n = std::max<int64_t>(0, (int64_t)std::ceil((v[1] - v[0]) / v[2]));
  if (n > kMaxKnownElements) c.unsupported("a per-iteration Range of over 4,096 values");
  auto run = [&](size_t k, DType to) { return m.reshape(c, m.cast_to(c, c.at(k), to), {}); };
  std::vector<double> steps((size_t)n);
  for (int64_t i = 0; i < n; ++i) steps[(size_t)i] = (double)i;
  const uint32_t offsets = m.cast_to(c, m.constant_of(steps, Shape{n}), t);
  const uint32_t out = m.emit(c, OpId::k_add, {run(0, t), m.emit(c, OpId::k_mul, {offsets, run(2, t)})});
  // The check, in float64: the last value is below the limit and the next would not be.
  const uint32_t start = run(0, DType::kFloat64), limit = run(1, DType::kFloat64), delta = run(2, DType::kFloat64);
  auto at = [&](double i) { return m.emit(c, OpId::k_add, {start, m.emit(c, OpId::k_mul, {delta, m.scalar(i, DType::kFloat64)})}); };
  const uint32_t ends_after = m.emit(c, OpId::k_ge, {at((double)n), limit});
  const uint32_t positive = m.emit(c, OpId::k_gt, {delta, m.scalar(0, DType::kFloat64)});
  uint32_t ok = m.emit(c, OpId::k_logical_and, {ends_after, positive});
  if (n > 0) ok = m.emit(c, OpId::k_logical_and, {ok, m.emit(c, OpId::k_lt, {at((double)(n - 1)), limit})});
  m.checks.push_back(ok);
  return {out};
}

}  // namespace spore::onnx::detail
