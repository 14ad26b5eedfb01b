// Lite's load-time rewriting (NOTE [Lite executor]).
#include "lite/optimize.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "ops/fused_program.h"
#include "spore/dispatch_plan.h"
#include "spore/error.h"
#include "spore/op_registry.h"

namespace spore::lite {

std::string OptimizeStats::str() const {
  return std::to_string(folded) + " nodes folded, " + std::to_string(fused_convs) + " convolutions fused (" +
         std::to_string(absorbed) + " elementwise nodes absorbed, " + std::to_string(expanded) +
         " fused_elementwise nodes expanded), " + std::to_string(gelus) + " erf GELUs made gelu";
}

bool fusion_enabled() {
  const char* v = std::getenv("SPORE_LITE_FUSION");
  return !(v && std::strcmp(v, "0") == 0);
}

namespace {

bool is_const(const ir::Graph& g, uint32_t id) { return g.values[id].data.defined(); }

// Readers of each value (node indices), and whether the graph returns it.
struct Uses {
  std::vector<std::vector<uint32_t>> readers;
  std::vector<bool> returned;
  explicit Uses(const ir::Graph& g) : readers(g.values.size()), returned(g.values.size(), false) {
    for (uint32_t n = 0; n < g.nodes.size(); ++n)
      for (uint32_t id : g.nodes[n].inputs) readers[id].push_back(n);
    for (uint32_t id : g.outputs) returned[id] = true;
  }
  // The single node reading v, or -1 (none, several, or v is a graph output).
  int only_reader(uint32_t v) const {
    return !returned[v] && readers[v].size() == 1 ? (int)readers[v][0] : -1;
  }
};

// A fused_elementwise node whose operands include a convolution's output is put back as its
// ops, so the convolution can absorb the per-channel affine ops and the clamp among them. Casts
// stay fused (their attribute is a dtype the expansion would have to rebuild): such nodes are kept.
int expand_fused(ir::Graph& g) {
  std::vector<bool> from_conv(g.values.size(), false);
  for (const ir::Node& n : g.nodes)
    if (n.def->id == OpId::k_conv2d)
      for (uint32_t o : n.outputs) from_conv[o] = true;
  std::vector<ir::Node> out;
  int expanded = 0;
  for (ir::Node& n : g.nodes) {
    bool reads_conv = false;
    for (uint32_t id : n.inputs) reads_conv = reads_conv || from_conv[id];
    if (n.def->id != OpId::k_fused_elementwise || !reads_conv || n.outputs.size() != 1) {
      out.push_back(std::move(n));
      continue;
    }
    ops::FusedProgram p = ops::parse_fused_program(n.attrs.s(0));
    std::vector<DType> dts;
    for (uint32_t id : n.inputs) dts.push_back(g.values[id].dtype);
    ops::type_fused_program(p, dts);
    bool plain = !p.instrs.empty();
    for (const ops::FusedInstr& in : p.instrs) plain = plain && in.op != OpId::k_cast;
    if (!plain) {
      out.push_back(std::move(n));
      continue;
    }
    std::vector<uint32_t> temp;
    for (size_t k = 0; k < p.instrs.size(); ++k) {
      const ops::FusedInstr& in = p.instrs[k];
      ir::Node e;
      e.def = &op_def(in.op);
      for (int a = 0; a < in.num_args; ++a)
        e.inputs.push_back(in.args[a] >= 0 ? n.inputs[(size_t)in.args[a]] : temp[(size_t)ops::fused_temp_index(in.args[a])]);
      if (k + 1 == p.instrs.size()) {
        e.outputs = n.outputs;
      } else {  // every member of a fused group has the group's shape (NOTE [Elementwise fusion])
        ir::Value v;
        v.kind = ir::ValueKind::kNode;
        v.dtype = in.result;
        v.dims = g.values[n.outputs[0]].dims;
        g.values.push_back(std::move(v));
        e.outputs = {(uint32_t)g.values.size() - 1};
      }
      temp.push_back(e.outputs[0]);
      out.push_back(std::move(e));
    }
    ++expanded;
  }
  g.nodes = std::move(out);
  return expanded;
}

// Nodes whose inputs are all constants are run once here and become constants (a BatchNorm's
// rsqrt(var + eps) * gamma, an ONNX Reshape's shape arithmetic). Not: random draws, ops that
// write their inputs, nodes with subgraphs, results over 64 MiB.
int fold_constants(ir::Graph& g) {
  int folded = 0;
  std::vector<ir::Node> out;
  for (ir::Node& n : g.nodes) {
    bool all_const = !n.inputs.empty() && n.subgraphs.empty() && n.def->writes_mask == 0 &&
                     n.def->id != OpId::k_random_uniform && n.def->id != OpId::k_random_normal;
    for (uint32_t id : n.inputs) all_const = all_const && is_const(g, id);
    if (all_const) {
      std::vector<Tensor> ins;
      for (uint32_t id : n.inputs) ins.push_back(g.values[id].data);
      TensorList r;
      try {
        // Planned first: the result's size is known before anything is allocated (a hostile
        // file's expand of a constant to terabytes is left to the plan, which reports it).
        const PlannedOp planned(n.def->id, ins, n.attrs);
        int64_t bytes = 0;
        for (int o = 0; o < planned.plan().num_outputs(); ++o)
          bytes += planned.plan().inference.outputs[o].shape.numel() * (int64_t)dtype_size(planned.plan().inference.outputs[o].dtype);
        if (bytes <= (int64_t{64} << 20)) r = planned.run(ins);
        else all_const = false;
      } catch (const Error&) {
        all_const = false;  // left in place: the plan reports the error as it would have
      }
      if (all_const && r.size() == (int)n.outputs.size()) {
        for (int o = 0; o < r.size(); ++o) {
          ir::Value& v = g.values[n.outputs[(size_t)o]];
          v.kind = ir::ValueKind::kConstant;
          // As the op made it: a folded view keeps its strides, so the kernel reading it sees the
          // layout it would have seen unfolded (a contiguous copy of a transposed weight would
          // send matmul down another summation order: a last-bit change).
          v.data = r[o];
        }
        ++folded;
        continue;
      }
    }
    out.push_back(std::move(n));
  }
  g.nodes = std::move(out);
  return folded;
}

// Per output channel, as double: c.numel() == 1 or c broadcasts along axis 1 of [N, O, H, W] only.
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

// A scalar constant's value (the bound of ONNX's Clip as maximum / minimum).
bool scalar_of(const ir::Graph& g, uint32_t id, double& x) {
  if (!is_const(g, id) || g.values[id].data.numel() != 1) return false;
  x = g.values[id].data.to(DType::kFloat64).contiguous().to_vector<double>()[0];
  return true;
}

bool same_meta(const ir::Value& a, const ir::Value& b) {
  if (a.dtype != b.dtype || a.dims.size() != b.dims.size()) return false;
  for (size_t d = 0; d < a.dims.size(); ++d)
    if (a.dims[d].extent != b.dims[d].extent || a.dims[d].symbol != b.dims[d].symbol) return false;
  return true;
}

// conv2d (float32) followed by single-reader chains of add/sub/mul/div by per-channel constants
// (y = scale * conv + shift, tracked in float64), then relu / relu6 / maximum and minimum by
// scalar constants (a clamp), becomes fused_conv2d(x, weight * scale, shift; clamp).
int fuse_convs(ir::Graph& g, int& absorbed) {
  const Uses uses(g);
  std::vector<bool> dead(g.nodes.size(), false);
  std::vector<ir::Node> replaced(g.nodes.size());
  std::vector<bool> replace(g.nodes.size(), false);
  int fused = 0;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    const ir::Node& conv = g.nodes[n];
    if (conv.def->id != OpId::k_conv2d || conv.outputs.size() != 1 || !is_const(g, conv.inputs[1])) continue;
    const uint32_t y0 = conv.outputs[0];
    if (g.values[y0].dtype != DType::kFloat32 || g.values[conv.inputs[1]].dtype != DType::kFloat32 ||
        g.values[conv.inputs[0]].dtype != DType::kFloat32)
      continue;
    const Tensor w = g.values[conv.inputs[1]].data;
    const int64_t o = w.shape()[0];
    std::vector<double> scale((size_t)o, 1.0), shift((size_t)o, 0.0), c;
    double lo = -INFINITY, hi = INFINITY;
    uint32_t cur = y0;
    std::vector<uint32_t> chain;
    for (int r; (r = uses.only_reader(cur)) >= 0;) {
      const ir::Node& e = g.nodes[(size_t)r];
      if (e.outputs.size() != 1 || !same_meta(g.values[e.outputs[0]], g.values[y0])) break;
      const OpId op = e.def->id;
      const bool clamped = lo > -INFINITY || hi < INFINITY;
      if ((op == OpId::k_add || op == OpId::k_sub || op == OpId::k_mul || op == OpId::k_div) && e.inputs.size() == 2 &&
          !clamped) {
        const int k = e.inputs[0] == cur ? 1 : 0;  // the constant operand
        if (e.inputs[(size_t)(1 - k)] != cur || !is_const(g, e.inputs[(size_t)k]) ||
            !per_channel(g.values[e.inputs[(size_t)k]].data, o, c))
          break;
        if (op == OpId::k_div && k == 0) break;  // c / y is not affine
        for (int64_t i = 0; i < o; ++i) {
          double &s = scale[(size_t)i], &t = shift[(size_t)i];
          const double ci = c[(size_t)i];
          if (op == OpId::k_add) t += ci;
          if (op == OpId::k_sub && k == 1) t -= ci;
          if (op == OpId::k_sub && k == 0) s = -s, t = ci - t;
          if (op == OpId::k_mul) s *= ci, t *= ci;
          if (op == OpId::k_div) s /= ci, t /= ci;
        }
      } else if (op == OpId::k_relu || op == OpId::k_relu6) {
        lo = std::max(lo, 0.0);
        if (op == OpId::k_relu6) hi = std::min(hi, 6.0);
      } else if ((op == OpId::k_maximum || op == OpId::k_minimum) && e.inputs.size() == 2) {
        const int k = e.inputs[0] == cur ? 1 : 0;
        double b;
        if (e.inputs[(size_t)(1 - k)] != cur || !scalar_of(g, e.inputs[(size_t)k], b) || std::isnan(b)) break;
        if (op == OpId::k_maximum) lo = std::max(lo, b);
        else hi = std::min(hi, b);
      } else {
        break;
      }
      if (!(lo <= hi)) break;
      chain.push_back((uint32_t)r);
      cur = e.outputs[0];
    }
    // The folded weight and bias, rounded once to float32.
    std::vector<float> wv = w.to(DType::kFloat32).contiguous().to_vector<float>(), bv((size_t)o);
    const int64_t per = w.numel() / std::max<int64_t>(1, o);
    for (int64_t i = 0; i < o; ++i) {
      for (int64_t j = 0; j < per; ++j) wv[(size_t)(i * per + j)] = (float)(wv[(size_t)(i * per + j)] * scale[(size_t)i]);
      bv[(size_t)i] = (float)shift[(size_t)i];
    }
    auto constant = [&](Tensor t) {
      ir::Value v;
      v.kind = ir::ValueKind::kConstant;
      v.dtype = t.dtype();
      for (int64_t e : t.shape().to_vector()) v.dims.push_back(ir::Dim{e, ""});
      v.data = std::move(t);
      g.values.push_back(std::move(v));
      return (uint32_t)g.values.size() - 1;
    };
    ir::Node f;
    f.def = &op_def(OpId::k_fused_conv2d);
    f.inputs = {conv.inputs[0], constant(Tensor::from_vector(wv, w.shape())), constant(Tensor::from_vector(bv, Shape{o}))};
    f.outputs = {cur};
    f.attrs = Attrs::of(conv.attrs.ints(0), conv.attrs.ints(1), conv.attrs.ints(2), conv.attrs.i(3), lo, hi);
    replaced[n] = std::move(f);
    replace[n] = true;
    for (uint32_t r : chain) dead[r] = true;
    absorbed += (int)chain.size();
    ++fused;
  }
  // The fused node runs where the conv ran: every absorbed node read only the chain, and the
  // chain's last value is first read after the last absorbed node, which is after the conv.
  std::vector<ir::Node> out;
  for (uint32_t n = 0; n < g.nodes.size(); ++n) {
    if (dead[n]) continue;
    out.push_back(replace[n] ? std::move(replaced[n]) : std::move(g.nodes[n]));
  }
  g.nodes = std::move(out);
  return fused;
}

// 0.5 * f * (1 + erf(f / sqrt(2))), as exporters write GELU (ONNX before op set 20 has no Gelu),
// becomes the registry's gelu(f): one pass instead of five. Matched: d = div(f, sqrt 2) or
// mul(f, 1/sqrt 2); e = erf(d); a = add(e, 1); y the product of f, 0.5 and a in any order and
// grouping (torch writes (f * 0.5) * a, Spore's exporter f * (0.5 * a)), each intermediate read
// once.
int substitute_gelu(ir::Graph& g) {
  const Uses uses(g);
  std::vector<int> producer(g.values.size(), -1);
  for (uint32_t n = 0; n < g.nodes.size(); ++n)
    for (uint32_t o : g.nodes[n].outputs) producer[o] = (int)n;
  auto node_of = [&](uint32_t v, OpId op) -> const ir::Node* {
    const int p = producer[v];
    return p >= 0 && g.nodes[(size_t)p].def->id == op && g.nodes[(size_t)p].inputs.size() == 2 ? &g.nodes[(size_t)p]
                                                                                                  : nullptr;
  };
  auto near = [](double x, double want) { return std::abs(x - want) <= 1e-6 * std::abs(want); };
  // The operand of binary node n that is not the scalar constant `want`, or -1.
  auto other_than = [&](const ir::Node* n, double want) -> int64_t {
    for (int k = 0; n && k < 2; ++k) {
      double c;
      if (scalar_of(g, n->inputs[(size_t)k], c) && near(c, want)) return n->inputs[(size_t)(1 - k)];
    }
    return -1;
  };
  auto once = [&](uint32_t v, uint32_t reader) { return uses.only_reader(v) == (int)reader; };
  std::vector<bool> dead(g.nodes.size(), false);
  int count = 0;
  for (uint32_t yn = 0; yn < g.nodes.size(); ++yn) {
    const ir::Node& y = g.nodes[yn];
    if (y.def->id != OpId::k_mul || y.inputs.size() != 2 || y.outputs.size() != 1) continue;
    // y is a product of three factors, one of its operands being a product read only by y:
    // 0.5, a = add(erf(d), 1) and f, in any order and grouping.
    for (int k = 0; k < 2; ++k) {
      const uint32_t inner = y.inputs[(size_t)k];
      const ir::Node* mn = node_of(inner, OpId::k_mul);
      if (!mn || !once(inner, yn)) continue;
      const int innern = producer[inner];
      // (factor, the mul node reading it)
      const std::pair<uint32_t, int> factors[3] = {
          {y.inputs[(size_t)(1 - k)], (int)yn}, {mn->inputs[0], innern}, {mn->inputs[1], innern}};
      int half = -1, add = -1;
      for (int q = 0; q < 3; ++q) {
        double c;
        if (half < 0 && scalar_of(g, factors[q].first, c) && near(c, 0.5)) half = q;
        else if (add < 0 && node_of(factors[q].first, OpId::k_add) && once(factors[q].first, (uint32_t)factors[q].second))
          add = q;
      }
      if (half < 0 || add < 0) continue;
      const int64_t f = factors[3 - half - add].first;
      const uint32_t a = factors[add].first;
      const ir::Node* an = node_of(a, OpId::k_add);
      const int64_t e = other_than(an, 1.0);
      if (e < 0 || !once((uint32_t)e, (uint32_t)producer[a])) continue;
      const int pe = producer[(size_t)e];
      if (pe < 0 || g.nodes[(size_t)pe].def->id != OpId::k_erf) continue;
      const uint32_t d = g.nodes[(size_t)pe].inputs[0];
      if (!once(d, (uint32_t)pe)) continue;
      double c;
      int64_t fd = -1;
      if (const ir::Node* dn = node_of(d, OpId::k_div); dn && scalar_of(g, dn->inputs[1], c) && near(c, std::sqrt(2.0)))
        fd = dn->inputs[0];
      if (const ir::Node* dm = node_of(d, OpId::k_mul)) fd = other_than(dm, 1.0 / std::sqrt(2.0));
      if (fd < 0 || fd != f || !same_meta(g.values[(size_t)f], g.values[y.outputs[0]])) continue;
      std::vector<int> chain{innern};
      for (int n : {producer[a], pe, producer[d]}) chain.push_back(n);
      for (int n : chain) dead[(size_t)n] = true;
      ir::Node gelu;
      gelu.def = &op_def(OpId::k_gelu);
      gelu.inputs = {(uint32_t)f};
      gelu.outputs = y.outputs;
      g.nodes[yn] = std::move(gelu);
      ++count;
      break;
    }
  }
  std::vector<ir::Node> out;
  for (uint32_t n = 0; n < g.nodes.size(); ++n)
    if (!dead[n]) out.push_back(std::move(g.nodes[n]));
  g.nodes = std::move(out);
  return count;
}

// Constants no node reads any more (a convolution's unfolded weight) release their bytes.
void drop_unread(ir::Graph& g) {
  std::vector<bool> read(g.values.size(), false);
  for (const ir::Node& n : g.nodes)
    for (uint32_t id : n.inputs) read[id] = true;
  for (uint32_t id : g.outputs) read[id] = true;
  for (size_t i = 0; i < g.values.size(); ++i)
    if (!read[i] && g.values[i].kind != ir::ValueKind::kInput) g.values[i].data = Tensor();
}

}  // namespace

OptimizeStats optimize(ir::Graph& g) {
  OptimizeStats s;
  for (const ir::Node& n : g.nodes)
    if (!n.subgraphs.empty()) return s;  // the executor refuses these with its own message
  s.expanded = expand_fused(g);
  s.folded = fold_constants(g);
  s.fused_convs = fuse_convs(g, s.absorbed);
  s.gelus = substitute_gelu(g);
  drop_unread(g);
  return s;
}

}  // namespace spore::lite
