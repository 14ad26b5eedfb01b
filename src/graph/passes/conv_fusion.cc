// Convolution fusion (NOTE [Inference passes]): a float32 conv2d with a constant weight absorbs
// the single-reader chain after it, add / sub / mul / div by per-channel or scalar constants
// (tracked as y = scale * conv + shift in float64, so an inference-mode BatchNorm folds into the
// weights and a bias), then relu / relu6 / maximum and minimum by scalar constants (ONNX's Clip)
// as a clamp, into one fused_conv2d(x, weight * scale, shift; lo, hi) where the conv ran.
//
// Only constants no node writes are folded: a captured parameter changes between calls (jit folds
// a Cell's weights only when the caller froze them, JitOptions::freeze).
#include <cmath>
#include <vector>

#include "graph/passes/pass_util.h"
#include "spore/op_registry.h"

namespace spore::graph {

namespace {

// Per output channel, as double: c.numel() == 1, or c broadcasts along axis 1 of [N, O, H, W] only.
bool per_channel(const Tensor& c, int64_t o, std::vector<double>& v) {
  const Shape& s = c.shape();
  if (c.numel() == 1) {
    v.assign((size_t)o, c.to(DType::kFloat64).contiguous().to_vector<double>()[0]);
    return true;
  }
  if (s.ndim() > 4 || s.ndim() < 3) return false;
  for (int d = 0; d < s.ndim(); ++d) {
    const int axis = d + 4 - s.ndim();  // right-aligned against [N, O, H, W]
    if (s[d] != (axis == 1 ? o : 1)) return false;
  }
  v = c.to(DType::kFloat64).contiguous().to_vector<double>();
  return true;
}

bool same_meta(const TensorMeta& a, const TensorMeta& b) { return a.dtype == b.dtype && a.shape == b.shape; }

// One conv2d and the chain it absorbs.
struct Match {
  int conv = -1;
  std::vector<int> chain;
  ValueId end = kNoValue;  // the chain's last value (the conv's output when nothing is absorbed)
  std::vector<double> scale, shift;
  double lo = -INFINITY, hi = INFINITY;
};

bool match_conv(const Graph& g, int n, const Readers& readers, const std::vector<std::vector<int>>& writers, Match& m) {
  const Node& conv = g.node(n);
  if (conv.op() != OpId::k_conv2d || conv.num_outputs != 1 || conv.num_inputs < 2) return false;
  const ValueId x = g.inputs(n)[0], w = g.inputs(n)[1], y0 = g.outputs(n)[0];
  if (!is_constant(g, w, writers) || !writers[y0].empty()) return false;
  if (g.value(y0).meta.dtype != DType::kFloat32 || g.value(w).meta.dtype != DType::kFloat32 ||
      g.value(x).meta.dtype != DType::kFloat32)
    return false;
  const int64_t o = g.value(w).meta.shape[0];
  m.conv = n;
  m.scale.assign((size_t)o, 1.0);
  m.shift.assign((size_t)o, 0.0);
  std::vector<double> c;
  ValueId cur = y0;
  for (int r; (r = readers.only(cur)) >= 0;) {
    const Node& e = g.node(r);
    if (e.num_outputs != 1 || !same_meta(g.value(g.outputs(r)[0]).meta, g.value(y0).meta) ||
        !writers[g.outputs(r)[0]].empty())
      break;
    const OpId op = e.op();
    std::span<const ValueId> in = g.inputs(r);
    const bool clamped = m.lo > -INFINITY || m.hi < INFINITY;
    if ((op == OpId::k_add || op == OpId::k_sub || op == OpId::k_mul || op == OpId::k_div) && in.size() == 2 && !clamped) {
      const int k = in[0] == cur ? 1 : 0;  // the constant operand
      if (in[(size_t)(1 - k)] != cur || !is_constant(g, in[(size_t)k], writers) ||
          !per_channel(g.value(in[(size_t)k]).tensor, o, c))
        break;
      if (op == OpId::k_div && k == 0) break;  // c / y is not affine
      for (int64_t i = 0; i < o; ++i) {
        double &s = m.scale[(size_t)i], &t = m.shift[(size_t)i];
        const double ci = c[(size_t)i];
        if (op == OpId::k_add) t += ci;
        if (op == OpId::k_sub && k == 1) t -= ci;
        if (op == OpId::k_sub && k == 0) s = -s, t = ci - t;
        if (op == OpId::k_mul) s *= ci, t *= ci;
        if (op == OpId::k_div) s /= ci, t /= ci;
      }
    } else if (op == OpId::k_relu || op == OpId::k_relu6) {
      m.lo = std::max(m.lo, 0.0);
      if (op == OpId::k_relu6) m.hi = std::min(m.hi, 6.0);
    } else if ((op == OpId::k_maximum || op == OpId::k_minimum) && in.size() == 2) {
      const int k = in[0] == cur ? 1 : 0;
      double b;
      if (in[(size_t)(1 - k)] != cur || !scalar_constant(g, in[(size_t)k], writers, b) || std::isnan(b)) break;
      if (op == OpId::k_maximum) m.lo = std::max(m.lo, b);
      else m.hi = std::min(m.hi, b);
    } else {
      break;
    }
    if (!(m.lo <= m.hi)) break;
    m.chain.push_back(r);
    cur = g.outputs(r)[0];
  }
  m.end = cur;
  return true;
}

}  // namespace

PassStats fuse_convolutions(Graph& g) {
  PassStats stats = start_stats("conv", g);
  const auto writers = writers_of_values(g);
  const Readers readers(g);
  std::vector<Match> matches;
  std::vector<bool> remove(g.num_nodes(), false);
  for (int n = 0; n < (int)g.num_nodes(); ++n) {
    Match m;
    if (!match_conv(g, n, readers, writers, m)) continue;
    remove[(size_t)n] = true;
    for (int r : m.chain) remove[(size_t)r] = true;
    stats.ops_fused += (int)m.chain.size();
    for (int r : m.chain) stats.bytes_saved += value_bytes(g, g.outputs(r)[0]);
    matches.push_back(std::move(m));
  }
  // Last match first, so the earlier ones' positions still hold; the fused node runs where the
  // conv ran: every absorbed node read only the chain, whose last value is read after it.
  for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
    const Match& m = *it;
    const Node conv = g.node(m.conv);
    const ValueId x = g.inputs(m.conv)[0];
    const Tensor w = g.value(g.inputs(m.conv)[1]).tensor;
    const int64_t o = w.shape()[0];
    // The folded weight and bias, rounded once to float32.
    std::vector<float> wv = w.to(DType::kFloat32).contiguous().to_vector<float>(), bv((size_t)o);
    const int64_t per = w.numel() / std::max<int64_t>(1, o);
    for (int64_t i = 0; i < o; ++i) {
      for (int64_t j = 0; j < per; ++j)
        wv[(size_t)(i * per + j)] = (float)(wv[(size_t)(i * per + j)] * m.scale[(size_t)i]);
      bv[(size_t)i] = (float)m.shift[(size_t)i];
    }
    // The weight is this graph's own: read-only, so the kernel may keep its blocked form (NOTE
    // [Derived forms]).
    Tensor folded = Tensor::from_vector(wv, w.shape());
    folded.storage()->make_read_only();
    const ValueId ins[3] = {x, g.add_constant(folded, "fused_conv_weight"),
                            g.add_constant(Tensor::from_vector(bv, Shape{o}), "fused_conv_bias")};
    const TensorMeta out = g.value(m.end).meta;
    const Attrs attrs =
        Attrs::of(conv.attrs.ints(0), conv.attrs.ints(1), conv.attrs.ints(2), conv.attrs.i(3), m.lo, m.hi, std::string());
    const int at = g.insert_node(m.conv, op_def(OpId::k_fused_conv2d), attrs, ins, std::span<const TensorMeta>(&out, 1));
    remove.insert(remove.begin() + at, false);
    g.replace_uses(m.end, g.outputs(at)[0]);
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
