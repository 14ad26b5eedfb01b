// Algebraic simplification (NOTE [Graph passes]): identities that drop a node or shorten a
// chain, each exact:
//   x*1, 1*x, x/1, x-0, x+0, 0+x  -> x   (only when the result has x's shape and dtype: a
//                                          broadcasting or promoting operand changes them)
//   neg(neg(x))                    -> x
//     (these two from the identities and involutions the ops' rows declare, NOTE [Op facts])
//   cast(x, dtype of x)            -> x
//   reshape(reshape(x))            -> reshape(x)   (and reshape to x's own shape -> x)
//   permute(permute(x, p), q)      -> permute(x, p∘q)   (and an identity permutation -> x)
// "1" and "0" are kConstant values or fill outputs that are exactly that in every element.
// x+0 turns a -0 in x into +0 (IEEE: -0 + +0 = +0); every other rule is bitwise.
// A rule never fires when x or the value it replaces is written in place by some node: the
// rewritten graph would then read x at another point of its history (NOTE [Graph passes]).
#include <algorithm>
#include <vector>

#include "graph/passes/pass_util.h"
#include "spore/ops.h"

namespace spore::graph {

namespace {

// Constants up to this many elements are read to see whether they are all 0 or all 1.
constexpr int64_t kMaxInspectedElements = 4096;

bool is_exactly(const Graph& g, ValueId v, double c) {
  const Value& val = g.value(v);
  if (val.kind == ValueKind::kConstant) {
    if (val.meta.shape.numel() > kMaxInspectedElements) return false;
    for (double x : cast(val.tensor, DType::kFloat64).to_vector<double>())
      if (x != c) return false;
    return true;
  }
  if (val.kind == ValueKind::kNode) {
    const Node& n = g.node(val.node);
    if (n.op() != OpId::k_fill) return false;
    // fill converts its value like cast(); 0 and 1 are exact in every dtype.
    return n.attrs.f(1) == c;
  }
  return false;
}

bool same_meta(const TensorMeta& a, const TensorMeta& b) {
  return a.shape == b.shape && a.dtype == b.dtype;
}

std::vector<int64_t> normalised_axes(const std::vector<int64_t>& axes) {
  std::vector<int64_t> p = axes;
  const int64_t nd = (int64_t)p.size();
  for (int64_t& a : p)
    if (a < 0) a += nd;
  return p;
}

class Simplifier {
 public:
  explicit Simplifier(Graph& g) : g_(g), writers_(writers_of_values(g)) {}

  PassStats run() {
    PassStats stats = start_stats("simplify", g_);
    remove_.assign(g_.num_nodes(), false);
    for (int i = 0; i < (int)g_.num_nodes(); ++i) {
      if (remove_[i]) continue;
      const Node& n = g_.node(i);
      if (n.num_outputs != 1 || n.def->writes_mask != 0) continue;
      const ValueId out = g_.outputs(i)[0];
      if (!writers_[out].empty()) continue;
      const int inserted = simplify(i, out, stats);
      if (inserted) i += inserted;  // a composed node went in before i: skip past both
    }
    g_.remove_nodes(remove_);
    return finish_stats(stats, g_);
  }

 private:
  bool mutable_value(ValueId v) const { return !writers_[v].empty(); }

  // Every reader of node i's output reads x instead; node i goes.
  void forward(int i, ValueId out, ValueId x, PassStats& stats) {
    g_.replace_uses(out, x);
    remove_[i] = true;
    stats.bytes_saved += value_bytes(g_, out);
  }

  // The node making `v` when that node is an `op`; -1 otherwise (graph inputs, other ops).
  int producer(ValueId v, OpId op) const {
    const Value& val = g_.value(v);
    if (val.kind != ValueKind::kNode) return -1;
    return g_.node(val.node).op() == op ? val.node : -1;
  }

  // Returns how many nodes it inserted before i.
  int simplify(int i, ValueId out, PassStats& stats) {
    const Node& n = g_.node(i);
    std::span<const ValueId> in = g_.inputs(i);
    const TensorMeta& meta = g_.value(out).meta;
    auto identity_operand = [&](int slot, double c) {
      const ValueId x = in[slot], other = in[1 - slot];
      return is_exactly(g_, other, c) && same_meta(g_.value(x).meta, meta) && !mutable_value(x);
    };
    // x op c and c op x where the op's row names c its identity, op(op(x)) for an involution
    // (NOTE [Op facts]): x * 1, 1 * x, x + 0, 0 + x, x - 0, x / 1, -(-x).
    const OpFacts& facts = n.def->facts;
    if (in.size() == 2) {
      if (facts.right_identity && identity_operand(0, *facts.right_identity)) return forward(i, out, in[0], stats), 0;
      if (facts.left_identity && identity_operand(1, *facts.left_identity)) return forward(i, out, in[1], stats), 0;
    }
    if (facts.involution && in.size() == 1) {
      const int inner = producer(in[0], n.op());
      if (inner < 0) return 0;
      const ValueId x = g_.inputs(inner)[0];
      if (!mutable_value(x) && !mutable_value(in[0])) forward(i, out, x, stats);
      return 0;
    }
    switch (n.op()) {
      case OpId::k_cast:
        if (same_meta(g_.value(in[0]).meta, meta) && !mutable_value(in[0]))
          forward(i, out, in[0], stats);
        return 0;
      case OpId::k_reshape: {
        ValueId src = in[0];
        if (const int inner = producer(src, OpId::k_reshape); inner >= 0 && !mutable_value(src)) {
          src = g_.inputs(inner)[0];
          g_.set_input(i, 0, src);  // the inner reshape stays for its other readers, if any
        }
        if (same_meta(g_.value(src).meta, meta) && !mutable_value(src)) forward(i, out, src, stats);
        return 0;
      }
      case OpId::k_permute:
        return simplify_permute(i, out, stats);
      default:
        return 0;
    }
  }

  int simplify_permute(int i, ValueId out, PassStats& stats) {
    const ValueId mid = g_.inputs(i)[0];
    const int inner = producer(mid, OpId::k_permute);
    if (inner < 0 || mutable_value(mid)) return 0;
    const ValueId x = g_.inputs(inner)[0];
    if (mutable_value(x)) return 0;
    const std::vector<int64_t> p = normalised_axes(g_.node(inner).attrs.ints(0));
    const std::vector<int64_t> q = normalised_axes(g_.node(i).attrs.ints(0));
    if (p.size() != q.size()) return 0;
    std::vector<int64_t> composed(q.size());
    bool identity = true;
    for (size_t k = 0; k < q.size(); ++k) {
      composed[k] = p[(size_t)q[k]];  // output axis k of the pair is axis p[q[k]] of x
      identity = identity && composed[k] == (int64_t)k;
    }
    if (identity) return forward(i, out, x, stats), 0;
    const TensorMeta meta[] = {g_.value(out).meta};
    const ValueId args[] = {x};
    const int added =
        g_.insert_node(i, op_def(OpId::k_permute), Attrs::of(std::move(composed)), args, meta);
    remove_.insert(remove_.begin() + added, false);
    // Node i moved to i + 1; its readers now read the composed permute.
    g_.replace_uses(out, g_.outputs(added)[0]);
    remove_[i + 1] = true;
    return 1;
  }

  Graph& g_;
  std::vector<std::vector<int>> writers_;
  std::vector<bool> remove_;
};

}  // namespace

PassStats simplify_algebra(Graph& g) {
  return Simplifier(g).run();
}

}  // namespace spore::graph
