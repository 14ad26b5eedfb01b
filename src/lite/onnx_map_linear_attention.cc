// ONNX's stateful sequence ops of op set 27 written with registry ops (NOTE [ONNX attention and
// losses]): LinearAttention's recurrence (linear, gated, delta, gated_delta; grouped-query heads
// sharing a KV head's state) unrolled over the sequence in float32, as the spec's reference runs
// it, and CausalConvWithState, a depthwise causal 1-D convolution over the carried state and the
// input: a sum of k shifted slices times the kernel's columns, with its optional SiLU.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// Longer sequences would unroll into a graph too large to plan: refused.
constexpr int64_t kMaxSteps = 4096;

struct Seq {
  NodeCtx& c;
  Mapper& m;
  uint32_t op(OpId id, std::vector<uint32_t> ins, const Attrs& a = {}) { return m.emit(c, id, ins, a); }
  uint32_t slice(uint32_t x, int axis, int64_t from, int64_t to) { return op(OpId::k_slice, {x}, Attrs::of((int64_t)axis, from, to, int64_t{1})); }
  // (B, T, H * D) -> (B, H, T, D) in float32
  uint32_t heads(uint32_t x, int64_t h, const char* what) {
    const Shape s = m.shape(x);
    if (s.ndim() != 3) c.bad(std::string(what) + " must be (B, T, H * D)");
    if (s[2] % h != 0) c.bad(std::string(what) + "'s last extent " + std::to_string(s[2]) + " is not a multiple of its heads " + std::to_string(h));
    const uint32_t v = m.reshape(c, m.cast_to(c, x, DType::kFloat32), {s[0], s[1], h, s[2] / h});
    return op(OpId::k_permute, {v}, Attrs::of(std::vector<int64_t>{0, 2, 1, 3}));
  }
  // Step i of a (B, H, T, D) value as (B, H, D)
  uint32_t step(uint32_t x, int64_t i) {
    const Shape s = m.shape(x);
    return m.reshape(c, slice(x, 2, i, i + 1), {s[0], s[1], s[3]});
  }
};

std::vector<uint32_t> linear_attention(NodeCtx& c) {
  Seq q{c, c.m};
  Mapper& m = c.m;
  const std::string rule = c.s("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta") c.bad("update_rule '" + rule + "'");
  const int64_t hq = c.i("q_num_heads", 0), hkv = c.i("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0) c.bad("q_num_heads must be a positive multiple of kv_num_heads (both required)");
  const bool gating = rule == "gated" || rule == "gated_delta", delta = rule == "delta" || rule == "gated_delta";
  if (gating != c.given(4)) c.bad("update_rule '" + rule + (gating ? "' needs" : "' takes no") + " decay input");
  if (delta != c.given(5)) c.bad("update_rule '" + rule + (delta ? "' needs" : "' takes no") + " beta input");
  const DType out_type = m.dtype(c.at(0));
  if (!is_floating(out_type)) c.bad("query must be floating-point");
  const uint32_t q4 = q.heads(c.at(0), hq, "query"), k4 = q.heads(c.at(1), hkv, "key"), v4 = q.heads(c.at(2), hkv, "value");
  const Shape qs = m.shape(q4), ks = m.shape(k4), vs = m.shape(v4);
  const int64_t b = qs[0], t = qs[2], dk = qs[3], dv = vs[3];
  if (ks[0] != b || vs[0] != b || ks[2] != t || vs[2] != t || ks[3] != dk) c.bad("query, key and value disagree in batch, length or key size");
  if (t > kMaxSteps) c.unsupported("a LinearAttention over " + std::to_string(t) + " steps (unrolled: at most " + std::to_string(kMaxSteps) + ")");
  uint32_t decay = kNone, beta = kNone;
  if (gating) {
    const Shape ds = m.shape(c.at(4));
    if (ds.ndim() != 3 || ds[0] != b || ds[1] != t || (ds[2] != hkv && ds[2] != hkv * dk)) c.bad("decay must be (B, T, H_kv) or (B, T, H_kv * d_k)");
    decay = q.heads(c.at(4), hkv, "decay");  // (B, H_kv, T, 1 or d_k)
  }
  if (delta) {
    const Shape bs = m.shape(c.at(5));
    if (bs.ndim() != 3 || bs[0] != b || bs[1] != t || (bs[2] != hkv && bs[2] != 1)) c.bad("beta must be (B, T, H_kv) or (B, T, 1)");
    beta = q.heads(c.at(5), bs[2], "beta");  // (B, H_kv or 1, T, 1)
  }
  DType state_type = out_type;
  uint32_t state;
  if (c.given(3)) {
    const Shape ps = m.shape(c.at(3));
    if (ps.ndim() != 4 || ps[0] != b || ps[1] != hkv || ps[2] != dk || ps[3] != dv) c.bad("past_state must be (B, H_kv, d_k, d_v)");
    state_type = m.dtype(c.at(3));
    state = m.cast_to(c, c.at(3), DType::kFloat32);
  } else {
    state = m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{b, hkv, dk, dv}, 0.0, DType::kFloat32));
  }
  const double scale = c.f("scale", 0) == 0 ? 1.0 / std::sqrt((double)dk) : c.f("scale", 0);
  std::vector<int64_t> share;  // query head h reads KV head h / group
  for (int64_t h = 0; h < hq; ++h) share.push_back(h / (hq / hkv));
  std::vector<uint32_t> outs;
  for (int64_t i = 0; i < t; ++i) {
    const uint32_t kt = q.step(k4, i);
    uint32_t vt = q.step(v4, i);
    if (gating) {
      const uint32_t g = q.step(decay, i);  // (B, H_kv, 1 or d_k)
      state = q.op(OpId::k_mul, {state, m.reshape(c, q.op(OpId::k_exp, {g}), {b, hkv, m.shape(g)[2], 1})});
    }
    if (delta) {  // v - S^T k, scaled by beta
      const uint32_t retrieved = m.reshape(c, q.op(OpId::k_matmul, {m.reshape(c, kt, {b, hkv, 1, dk}), state}), {b, hkv, dv});
      vt = q.op(OpId::k_mul, {q.step(beta, i), q.op(OpId::k_sub, {vt, retrieved})});
    }
    state = q.op(OpId::k_add, {state, q.op(OpId::k_mul, {m.reshape(c, kt, {b, hkv, dk, 1}), m.reshape(c, vt, {b, hkv, 1, dv})})});
    const uint32_t read = hq == hkv ? state : m.take(c, state, 1, share);
    const uint32_t o = q.op(OpId::k_matmul, {m.reshape(c, q.step(q4, i), {b, hq, 1, dk}), read});  // (B, H_q, 1, d_v)
    outs.push_back(q.op(OpId::k_mul, {o, m.scalar(scale, DType::kFloat32)}));
  }
  uint32_t y = outs.size() == 1 ? outs[0] : q.op(OpId::k_concat, outs, Attrs::of(int64_t{2}));
  if (outs.empty()) y = m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{b, hq, 0, dv}, 0.0, DType::kFloat32));
  y = m.reshape(c, q.op(OpId::k_permute, {y}, Attrs::of(std::vector<int64_t>{0, 2, 1, 3})), {b, t, hq * dv});
  return {m.cast_to(c, y, out_type), m.cast_to(c, state, state_type)};
}

std::vector<uint32_t> causal_conv_with_state(NodeCtx& c) {
  Seq q{c, c.m};
  Mapper& m = c.m;
  const uint32_t x = c.at(0), w = c.at(1);
  const Shape xs = m.shape(x), ws = m.shape(w);
  if (xs.ndim() != 3) c.bad("input must be (batch, channels, length)");
  if (ws.ndim() != 3 || ws[0] != xs[1] || ws[1] != 1) c.bad("weight must be (channels, 1, k)");
  const DType t = m.dtype(x);
  if (!is_floating(t)) c.bad("input must be floating-point");
  const std::string act = c.s("activation", "none");
  if (act != "none" && act != "silu" && act != "swish") c.bad("activation '" + act + "' (none, silu or swish)");
  const int64_t batch = xs[0], ch = xs[1], len = xs[2], k = ws[2];
  if (k < 1) c.bad("the kernel needs at least one tap");
  if (k > kMaxSteps) c.unsupported("a kernel of " + std::to_string(k) + " taps");
  uint32_t past;
  if (c.given(3)) {
    const Shape ps = m.shape(c.at(3));
    if (ps.ndim() != 3 || ps[0] != batch || ps[1] != ch || ps[2] != k - 1) c.bad("past_state must be (batch, channels, k - 1)");
    past = m.cast_to(c, c.at(3), t);
  } else {
    past = m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{batch, ch, k - 1}, 0.0, t));
  }
  const uint32_t padded = k > 1 ? q.op(OpId::k_concat, {past, x}, Attrs::of(int64_t{2})) : x;
  // float16 is accumulated in float32 and rounded once.
  const DType acc = t == DType::kFloat16 ? DType::kFloat32 : t;
  const uint32_t p32 = m.cast_to(c, padded, acc), w32 = m.cast_to(c, m.reshape(c, w, {ch, k}), acc);
  uint32_t y = kNone;
  for (int64_t j = 0; j < k; ++j) {  // output t reads padded t + j with tap j
    const uint32_t tap = m.reshape(c, q.slice(w32, 1, j, j + 1), {ch, 1});
    const uint32_t term = q.op(OpId::k_mul, {q.slice(p32, 2, j, j + len), tap});
    y = y == kNone ? term : q.op(OpId::k_add, {y, term});
  }
  if (c.given(2)) y = q.op(OpId::k_add, {y, m.reshape(c, m.cast_to(c, c.at(2), acc), {ch, 1})});
  y = m.cast_to(c, y, t);
  if (act != "none") {
    const uint32_t f = m.cast_to(c, y, DType::kFloat32);
    y = m.cast_to(c, q.op(OpId::k_mul, {f, q.op(OpId::k_sigmoid, {f})}), t);
  }
  const int64_t total = k - 1 + len;
  const uint32_t present = k > 1 ? q.slice(padded, 2, total - (k - 1), total) : m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{batch, ch, 0}, 0.0, t));
  return {y, present};
}

}  // namespace

void add_linear_attention_ops(HandlerTable& t) {
  t["LinearAttention"] = linear_attention;
  t["CausalConvWithState"] = causal_conv_with_state;
}

}  // namespace spore::onnx::detail
