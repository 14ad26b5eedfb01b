// ONNX LSTM, GRU and RNN onto registry ops (NOTE [ONNX]): the sequence is unrolled when the graph
// is mapped (its length is known then: a fixed extent, or predict's shapes), the input projection
// of every step done as one product, then per step the recurrent product and the gates in the
// spec's equations. Forward, reverse and bidirectional; layout 0 and 1; peepholes; clip.
// com.microsoft's DynamicQuantizeLSTM (ONNX Runtime's quantize_dynamic writes it) is the same LSTM
// with int8 / uint8 weights stored [dirs, input, 4H] and [dirs, H, 4H] (transposed against
// LSTM's), a scale and zero point per direction or per gate column, and each product computed
// as ONNX Runtime's kernel computes it: its float operand (all of X at once, then h at each step)
// quantized dynamically to uint8 over its whole range, the integer product exact (float32 runs
// summed in float64, NOTE [Exact integer products in float32]), then scaled by a_scale * w_scale
// in float32.
#include <functional>
#include <map>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// More steps than this would be a graph too large to plan: refused.
constexpr int64_t kMaxSteps = 4096;

struct Recurrent {
  NodeCtx& c;
  int gates;     // 4 (LSTM), 3 (GRU), 1 (RNN)
  int64_t h = 0;  // hidden size
  int dirs = 1;
  std::vector<std::string> acts;
  double clip = 0;

  uint32_t e(OpId op, std::vector<uint32_t> ins, const Attrs& a = {}) { return c.m.emit(c, op, ins, a); }
  uint32_t cut(uint32_t x, int axis, int64_t from, int64_t to) { return e(OpId::k_slice, {x}, Attrs::of((int64_t)axis, from, to, int64_t{1})); }
  uint32_t act(int dir, int k, uint32_t x) {
    const std::string& name = acts[(size_t)(dir * (acts.size() / dirs) + k)];
    if (name == "Sigmoid") return e(OpId::k_sigmoid, {x});
    if (name == "Tanh") return e(OpId::k_tanh, {x});
    if (name == "Relu") return e(OpId::k_relu, {x});
    c.unsupported("the activation " + name);
  }
  uint32_t clipped(uint32_t x) {
    if (clip <= 0) return x;
    const DType t = c.m.dtype(x);
    return e(OpId::k_minimum, {e(OpId::k_maximum, {x, c.m.scalar(-clip, t)}), c.m.scalar(clip, t)});
  }
  // Row `dir` of a per-direction parameter [dirs, ...], as [...].
  uint32_t row(uint32_t p, int dir) {
    const Shape& s = c.m.shape(p);
    std::vector<int64_t> rest(s.begin() + 1, s.end());
    return c.m.reshape(c, cut(p, 0, dir, dir + 1), rest);
  }
  // A weight [G*H, K] as the products read it, [K, G*H], materialised (the copy folds at load):
  // the recurrence's one-row products then read B's rows, not its columns (matmul_direct.inc).
  uint32_t transposed(uint32_t m2) {
    return e(OpId::k_copy, {e(OpId::k_permute, {m2}, Attrs::of(std::vector<int64_t>{1, 0}))});
  }
  // a [..., K] times direction d's input (recurrent: recurrence) weights, [..., G*H]; set per op.
  std::function<uint32_t(uint32_t a, int d, bool recurrence)> product;
  // DynamicQuantizeLSTM: each direction's weights as its products read them, made once for all
  // steps (keyed by the weight's value and the direction).
  std::map<std::pair<uint32_t, int>, uint32_t> weight_rows;
};

// DynamicQuantizeLSTM's products (see the top of the file): weights [dirs, K, G*H] as stored,
// scales and zero points at inputs scale_k and scale_k + 1.
uint32_t quantized_product(Recurrent& r, uint32_t a, int d, uint32_t w, size_t scale_k) {
  NodeCtx& c = r.c;
  Mapper& m = c.m;
  const uint32_t scale = r.row(c.at(scale_k), d), zp = r.row(c.at(scale_k + 1), d);  // [] or [G*H]
  const DType wt = m.dtype(w);
  if (wt != DType::kInt8 && wt != DType::kUInt8) c.bad("quantized weights must be int8 or uint8, not " + std::string(dtype_name(wt)));
  if (m.dtype(zp) != wt) c.bad("a weight zero point must have its weight's type");
  bool zero_point_zero = m.is_constant(zp);
  if (zero_point_zero)
    for (double z : m.float_data(c, zp, "zero point")) zero_point_zero = zero_point_zero && z == 0;
  const Shape ws = m.shape(w), as = m.shape(a);
  if (wt == DType::kInt8 && zero_point_zero && m.is_constant(w)) {
    // An int8 weight without a zero point: one dynamic_quant_matmul, which quantizes a and sums
    // exactly as the definition below does (NOTE [Dynamic int8 products]), its [K, G*H] weight a
    // constant of its own.
    auto [it, fresh] = r.weight_rows.try_emplace({w, d}, kNone);
    if (fresh) {
      const Tensor row = dispatch1(OpId::k_slice, {m.data(c, w, "W")}, Attrs::of(int64_t{0}, (int64_t)d, (int64_t)d + 1, int64_t{1}));
      it->second = m.constant(dispatch1(OpId::k_reshape, {row}, Attrs::of(std::vector<int64_t>{ws[1], ws[2]})).contiguous());
    }
    const int64_t k = ws[1], ns = m.shape(scale).numel();
    const uint32_t a2 = m.reshape(c, m.cast_to(c, a, DType::kFloat32), {as.numel() / k, k});
    const uint32_t y = m.emit(c, OpId::k_dynamic_quant_matmul, {a2, it->second, m.reshape(c, m.cast_to(c, scale, DType::kFloat32), {ns})});
    std::vector<int64_t> out(as.begin(), as.end());
    out.back() = ws[2];
    return m.reshape(c, y, out);
  }
  auto [it, fresh] = r.weight_rows.try_emplace({w, d}, kNone);
  if (fresh) it->second = r.e(OpId::k_sub, {m.cast_to(c, r.row(w, d), DType::kFloat64), m.cast_to(c, zp, DType::kFloat64)});
  const uint32_t wc = it->second;
  const DynamicQuant q = dynamic_quantize(c, a);
  const uint32_t ac = r.e(OpId::k_sub, {m.cast_to(c, q.q, DType::kFloat64), m.cast_to(c, q.zero_point, DType::kFloat64)});
  const double bound = centered_bound(c, DType::kUInt8, q.zero_point) * centered_bound(c, wt, zp);
  const uint32_t acc = m.cast_to(c, exact_integer_matmul(c, ac, wc, bound), DType::kFloat32);
  return r.e(OpId::k_mul, {acc, r.e(OpId::k_mul, {q.scale, m.cast_to(c, scale, DType::kFloat32)})});
}

std::vector<uint32_t> recurrent(NodeCtx& c, int gates, const char* op, bool quantized = false) {
  Recurrent r{c, gates, 0, 1, {}, 0, {}, {}};
  Mapper& m = c.m;
  const int layout = (int)c.i("layout", 0);
  uint32_t x = c.at(0);
  if (m.shape(x).ndim() != 3) c.bad("X must be 3-D");
  if (layout == 1) x = r.e(OpId::k_permute, {x}, Attrs::of(std::vector<int64_t>{1, 0, 2}));
  const Shape xs = m.shape(x);  // [seq, batch, input]
  const int64_t seq = xs[0], batch = xs[1];
  if (seq > kMaxSteps) c.unsupported(std::string(op) + " over " + std::to_string(seq) + " steps (unrolled: at most " + std::to_string(kMaxSteps) + ")");
  const std::string direction = c.s("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") c.bad("direction '" + direction + "'");
  r.dirs = direction == "bidirectional" ? 2 : 1;
  const uint32_t w = c.at(1), rw = c.at(2);
  const Shape& ws = m.shape(w);
  const int gate_axis = quantized ? 2 : 1, in_axis = quantized ? 1 : 2;  // quantized weights are stored transposed
  if (ws.ndim() != 3 || ws[0] != r.dirs || ws[gate_axis] % gates != 0 || ws[in_axis] != xs[2]) c.bad("W has shape " + ws.str());
  r.h = c.i("hidden_size", ws[gate_axis] / gates);
  if (r.h * gates != ws[gate_axis]) c.bad("hidden_size does not match W");
  if (m.shape(rw) != (quantized ? Shape{r.dirs, r.h, gates * r.h} : Shape{r.dirs, gates * r.h, r.h}))
    c.bad("R has shape " + m.shape(rw).str());
  if (quantized) {
    r.product = [&r, w, rw](uint32_t a, int d, bool recurrence) { return quantized_product(r, a, d, recurrence ? rw : w, recurrence ? 10 : 8); };
  } else {
    // Each direction's weights transposed once: [in, G*H] and [H, G*H].
    std::vector<uint32_t> wts, rts;
    for (int d = 0; d < r.dirs; ++d) wts.push_back(r.transposed(r.row(w, d))), rts.push_back(r.transposed(r.row(rw, d)));
    r.product = [&r, wts, rts](uint32_t a, int d, bool recurrence) {
      return r.e(OpId::k_matmul, {a, recurrence ? rts[(size_t)d] : wts[(size_t)d]});
    };
  }
  if (c.given(4)) {  // sequence_lens: every sequence whole is the only case mapped
    for (int64_t len : m.int_data(c, c.in[4], "sequence_lens"))
      if (len != seq) c.unsupported("sequences of different lengths (sequence_lens)");
  }
  if (c.i("input_forget", 0) != 0) c.unsupported("input_forget = 1");
  if (!c.floats("activation_alpha").empty() || !c.floats("activation_beta").empty()) c.unsupported("activation_alpha/beta");
  r.clip = c.f("clip", 0.0);
  const std::vector<std::string> defaults = gates == 4 ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : gates == 3 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                         : std::vector<std::string>{"Tanh"};
  r.acts = c.strings("activations");
  if (r.acts.empty())
    for (int d = 0; d < r.dirs; ++d) r.acts.insert(r.acts.end(), defaults.begin(), defaults.end());
  if (r.acts.size() != defaults.size() * r.dirs) c.bad("activations has " + std::to_string(r.acts.size()) + " names");
  const DType t = m.dtype(x);
  const int64_t h = r.h;
  const bool lstm = gates == 4, gru = gates == 3;
  const bool before_reset = gru && c.i("linear_before_reset", 0) != 0;
  auto zeros = [&](std::vector<int64_t> s) { return m.emit(c, OpId::k_fill, {}, Attrs::of(s, 0.0, t)); };
  std::vector<uint32_t> ys, hs, cs;
  for (int d = 0; d < r.dirs; ++d) {
    const bool backward = direction == "reverse" || d == 1;
    const uint32_t rt = gru ? r.transposed(r.row(rw, d)) : kNone;  // GRU cuts its recurrence weights: [H, G*H]
    uint32_t wb = kNone, rb = kNone;
    if (c.given(3)) {
      const uint32_t b = r.row(c.in[3], d);  // [2*G*H]
      wb = r.cut(b, 0, 0, gates * h);
      rb = r.cut(b, 0, gates * h, 2 * gates * h);
    }
    uint32_t xw = r.product(x, d, false);  // [seq, batch, G*H]
    if (wb != kNone) xw = r.e(OpId::k_add, {xw, wb});
    if (wb != kNone && !gru) xw = r.e(OpId::k_add, {xw, rb});  // GRU's recurrent bias of h sits inside the reset
    uint32_t hv = c.given(5) ? r.row(c.in[5], d) : zeros({batch, h});
    uint32_t cv = lstm ? (c.given(6) ? r.row(c.in[6], d) : zeros({batch, h})) : kNone;
    uint32_t pi = kNone, po = kNone, pf = kNone;
    if (lstm && c.given(7)) {
      const uint32_t p = r.row(c.in[7], d);
      pi = r.cut(p, 0, 0, h), po = r.cut(p, 0, h, 2 * h), pf = r.cut(p, 0, 2 * h, 3 * h);
    }
    std::vector<uint32_t> steps((size_t)seq);
    for (int64_t k = 0; k < seq; ++k) {
      const int64_t at = backward ? seq - 1 - k : k;
      const uint32_t xt = m.reshape(c, r.cut(xw, 0, at, at + 1), {batch, gates * h});
      if (lstm) {
        const uint32_t g = r.clipped(r.e(OpId::k_add, {xt, r.product(hv, d, true)}));
        uint32_t i = r.cut(g, 1, 0, h), o = r.cut(g, 1, h, 2 * h), f = r.cut(g, 1, 2 * h, 3 * h), cc = r.cut(g, 1, 3 * h, 4 * h);
        if (pi != kNone) i = r.e(OpId::k_add, {i, r.e(OpId::k_mul, {pi, cv})}), f = r.e(OpId::k_add, {f, r.e(OpId::k_mul, {pf, cv})});
        i = r.act(d, 0, i);
        f = r.act(d, 0, f);
        cc = r.act(d, 1, cc);
        cv = r.e(OpId::k_add, {r.e(OpId::k_mul, {f, cv}), r.e(OpId::k_mul, {i, cc})});
        if (po != kNone) o = r.e(OpId::k_add, {o, r.e(OpId::k_mul, {po, cv})});
        o = r.act(d, 0, o);
        hv = r.e(OpId::k_mul, {o, r.act(d, 2, cv)});
      } else if (gru) {
        uint32_t hr = r.e(OpId::k_matmul, {hv, r.cut(rt, 1, 0, 2 * h)});  // z and r parts
        if (rb != kNone) hr = r.e(OpId::k_add, {hr, r.cut(rb, 0, 0, 2 * h)});
        const uint32_t zr = r.clipped(r.e(OpId::k_add, {r.cut(xt, 1, 0, 2 * h), hr}));
        const uint32_t z = r.act(d, 0, r.cut(zr, 1, 0, h)), rg = r.act(d, 0, r.cut(zr, 1, h, 2 * h));
        const uint32_t rh = r.cut(rt, 1, 2 * h, 3 * h);
        uint32_t inner;
        if (before_reset) {
          inner = r.e(OpId::k_matmul, {hv, rh});
          if (rb != kNone) inner = r.e(OpId::k_add, {inner, r.cut(rb, 0, 2 * h, 3 * h)});
          inner = r.e(OpId::k_mul, {rg, inner});
        } else {
          inner = r.e(OpId::k_matmul, {r.e(OpId::k_mul, {rg, hv}), rh});
          if (rb != kNone) inner = r.e(OpId::k_add, {inner, r.cut(rb, 0, 2 * h, 3 * h)});
        }
        const uint32_t cand = r.act(d, 1, r.clipped(r.e(OpId::k_add, {r.cut(xt, 1, 2 * h, 3 * h), inner})));
        // (1 - z) * cand + z * h = cand + z * (h - cand)
        hv = r.e(OpId::k_add, {cand, r.e(OpId::k_mul, {z, r.e(OpId::k_sub, {hv, cand})})});
      } else {
        hv = r.act(d, 0, r.clipped(r.e(OpId::k_add, {xt, r.product(hv, d, true)})));
      }
      steps[(size_t)at] = m.reshape(c, hv, {1, 1, batch, h});
    }
    ys.push_back(seq == 0 ? zeros({0, 1, batch, h}) : seq == 1 ? steps[0] : r.e(OpId::k_concat, steps, Attrs::of(int64_t{0})));
    hs.push_back(m.reshape(c, hv, {1, batch, h}));
    if (lstm) cs.push_back(m.reshape(c, cv, {1, batch, h}));
  }
  auto join = [&](const std::vector<uint32_t>& v, int64_t axis) { return v.size() == 1 ? v[0] : r.e(OpId::k_concat, v, Attrs::of(axis)); };
  uint32_t y = join(ys, 1), yh = join(hs, 0), yc = lstm ? join(cs, 0) : kNone;
  if (layout == 1) {
    y = r.e(OpId::k_permute, {y}, Attrs::of(std::vector<int64_t>{2, 0, 1, 3}));
    yh = r.e(OpId::k_permute, {yh}, Attrs::of(std::vector<int64_t>{1, 0, 2}));
    if (lstm) yc = r.e(OpId::k_permute, {yc}, Attrs::of(std::vector<int64_t>{1, 0, 2}));
  }
  std::vector<uint32_t> out = {y, yh};
  if (lstm) out.push_back(yc);
  return out;
}

}  // namespace

void add_recurrent_ops(HandlerTable& t) {
  t["LSTM"] = [](NodeCtx& c) { return recurrent(c, 4, "LSTM"); };
  t["GRU"] = [](NodeCtx& c) { return recurrent(c, 3, "GRU"); };
  t["RNN"] = [](NodeCtx& c) { return recurrent(c, 1, "RNN"); };
  t["com.microsoft/DynamicQuantizeLSTM"] = [](NodeCtx& c) { return recurrent(c, 4, "DynamicQuantizeLSTM", true); };
}

}  // namespace spore::onnx::detail
