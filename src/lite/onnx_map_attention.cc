// ONNX's Attention (op sets 23-25) written with registry ops (NOTE [ONNX attention and losses]):
// the function body the spec gives, step by step, so every attribute keeps its meaning: 3-D
// inputs split into heads, grouped-query heads repeated, past key / value concatenated (the
// present outputs), the scale applied as sqrt(scale) to Q and K, softcap, a boolean or float
// mask (shorter masks padded), causal and sliding-window frontiers offset by the cache, the
// external cache's nonpad_kv_seqlen, softmax_precision, the four qk_matmul_output modes, and the
// fully-masked-row guard (such rows are zero, not NaN).
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct Emit {
  NodeCtx& c;
  uint32_t op(OpId id, std::vector<uint32_t> ins, const Attrs& a = {}) { return c.m.emit(c, id, ins, a); }
  uint32_t permute(uint32_t x, std::vector<int64_t> perm) { return op(OpId::k_permute, {x}, Attrs::of(std::move(perm))); }
  // [B, S, H * D] -> [B, H, S, D]
  uint32_t heads(uint32_t x, int64_t h, const char* what) {
    const Shape s = c.m.shape(x);
    if (h <= 0 || s[2] % h != 0) c.bad(std::string(what) + "'s hidden size " + std::to_string(s[2]) + " is not a multiple of its head count " + std::to_string(h));
    return permute(c.m.reshape(c, x, {s[0], s[1], h, s[2] / h}), {0, 2, 1, 3});
  }
  // where(allowed, 0, -inf) in dtype t
  uint32_t bias_of(uint32_t allowed, DType t) { return op(OpId::k_where, {allowed, c.m.scalar(0, t), c.m.scalar(-INFINITY, t)}); }
  uint32_t both(uint32_t a, uint32_t b) { return a == kNone ? b : op(OpId::k_logical_and, {a, b}); }
};

std::vector<uint32_t> attention(NodeCtx& c) {
  Emit e{c};
  Mapper& m = c.m;
  uint32_t q = c.at(0), k = c.at(1), v = c.at(2);
  const int rank = m.shape(q).ndim();
  if (rank != 3 && rank != 4) c.bad("Q must be 3-D or 4-D, not " + std::to_string(rank) + "-D");
  if (m.shape(k).ndim() != rank || m.shape(v).ndim() != rank) c.bad("Q, K and V must have the same rank");
  const DType io = m.dtype(q);
  if (!is_floating(io)) c.bad("Attention takes floating-point Q, K and V");
  // float16 runs in float32 and is rounded once at the end, as ONNX Runtime's CPU kernel does:
  // rounding each step of the chain to float16 drifts by more than the node tests' 1e-3.
  const DType t = io == DType::kFloat16 ? DType::kFloat32 : io;
  q = m.cast_to(c, q, t);
  k = m.cast_to(c, k, t);
  v = m.cast_to(c, v, t);
  if (rank == 3) {
    const int64_t hq = c.i("q_num_heads", 0), hkv = c.i("kv_num_heads", 0);
    if (hq <= 0 || hkv <= 0) c.bad("3-D inputs need q_num_heads and kv_num_heads (> 0)");
    q = e.heads(q, hq, "Q");
    k = e.heads(k, hkv, "K");
    v = e.heads(v, hkv, "V");
  }
  const Shape qs = m.shape(q);
  const int64_t batch = qs[0], hq = qs[1], sq = qs[2], d = qs[3];
  if (m.shape(k)[0] != batch || m.shape(v)[0] != batch) c.bad("Q, K and V disagree in their batch size");
  if (m.shape(k)[3] != d) c.bad("Q and K disagree in their head size");
  if (m.shape(k)[1] != m.shape(v)[1] || m.shape(k)[2] != m.shape(v)[2]) c.bad("K and V disagree in heads or sequence length");

  // The cache: past and present together (case 1) or nonpad_kv_seqlen (case 2), not both.
  if (c.given(4) != c.given(5)) c.bad("past_key and past_value must be given together");
  const bool external = c.given(6);
  if (external && c.given(4)) c.bad("nonpad_kv_seqlen cannot be combined with past_key and past_value");
  int64_t past = 0;
  if (c.given(4)) {
    past = m.shape(c.at(4))[2];
    k = e.op(OpId::k_concat, {m.cast_to(c, c.at(4), t), k}, Attrs::of(int64_t{2}));
    v = e.op(OpId::k_concat, {m.cast_to(c, c.at(5), t), v}, Attrs::of(int64_t{2}));
  }
  const uint32_t present_k = m.cast_to(c, k, io), present_v = m.cast_to(c, v, io);
  const int64_t total = m.shape(k)[2], hkv = m.shape(k)[1];

  // Grouped-query attention: each K / V head serves hq / hkv query heads (h0, h0, h1, h1, ...).
  if (hq != hkv) {
    if (hkv <= 0 || hq % hkv != 0) c.bad("q_num_heads " + std::to_string(hq) + " is not a multiple of kv_num_heads " + std::to_string(hkv));
    std::vector<int64_t> idx;
    for (int64_t h = 0; h < hq; ++h) idx.push_back(h / (hq / hkv));
    k = m.take(c, k, 1, idx);
    v = m.take(c, v, 1, idx);
  }

  // The additive bias: the mask (boolean: 0 / -inf) plus the frontiers' -inf.
  uint32_t bias = kNone;
  if (c.given(3)) {
    uint32_t mask = c.at(3);
    const Shape ms = m.shape(mask);
    if (ms.ndim() < 1 || ms.ndim() > 4) c.bad("attn_mask must have 1 to 4 dimensions");
    const int64_t len = ms[ms.ndim() - 1];
    if (len > total) c.bad("attn_mask's last extent " + std::to_string(len) + " is longer than the key sequence " + std::to_string(total));
    const bool boolean = m.dtype(mask) == DType::kBool;
    if (len < total) mask = pad_axis(c, mask, ms.ndim() - 1, 0, total - len, boolean ? 0.0 : -INFINITY);
    bias = boolean ? e.bias_of(mask, t) : m.cast_to(c, mask, t);
  }
  // Key j is allowed for query i by the frontiers when j - i (a [sq, total] constant built from
  // two index vectors) is within the offset's bounds; the offset is the cache length before the
  // queries: past's length, nonpad_kv_seqlen - sq per batch ([B, 1, 1, 1]), or 0.
  const bool causal = c.i("is_causal", 0) != 0;
  const int64_t left = c.i("left_window_size", -1), right = c.i("right_window_size", -1);
  if (left < -1 || right < -1) c.bad("left_window_size and right_window_size must be -1 or >= 0");
  uint32_t nonpad = kNone;
  if (external) {
    nonpad = m.cast_to(c, c.at(6), DType::kInt64);
    if (m.shape(nonpad).numel() != batch) c.bad("nonpad_kv_seqlen must hold one length per batch entry");
    nonpad = m.reshape(c, nonpad, {batch, 1, 1, 1});
  }
  uint32_t allowed = kNone;
  if (causal || left >= 0 || right >= 0) {
    std::vector<int64_t> qi((size_t)sq), kj((size_t)total);
    for (int64_t i = 0; i < sq; ++i) qi[(size_t)i] = i;
    for (int64_t j = 0; j < total; ++j) kj[(size_t)j] = j;
    const uint32_t diff = e.op(OpId::k_sub, {m.constant_of(kj, Shape{1, total}), m.constant_of(qi, Shape{sq, 1})});
    const uint32_t offset = external ? e.op(OpId::k_sub, {nonpad, m.scalar((double)sq, DType::kInt64)}) : m.scalar((double)past, DType::kInt64);
    auto shifted = [&](int64_t by) { return e.op(OpId::k_add, {offset, m.scalar((double)by, DType::kInt64)}); };
    if (causal) allowed = e.both(allowed, e.op(OpId::k_le, {diff, offset}));
    if (left >= 0) allowed = e.both(allowed, e.op(OpId::k_ge, {diff, shifted(-left)}));
    if (right >= 0) allowed = e.both(allowed, e.op(OpId::k_le, {diff, shifted(right)}));
  }
  if (external) {  // keys past each entry's length are padding
    std::vector<int64_t> kj((size_t)total);
    for (int64_t j = 0; j < total; ++j) kj[(size_t)j] = j;
    allowed = e.both(allowed, e.op(OpId::k_lt, {m.constant_of(kj, Shape{1, 1, 1, total}), nonpad}));
  }
  if (allowed != kNone) {
    const uint32_t frontier = e.bias_of(allowed, t);
    bias = bias == kNone ? frontier : e.op(OpId::k_add, {bias, frontier});
  }

  // Scores: (Q * sqrt(scale)) (K * sqrt(scale))^T, then softcap.
  const double scale = c.has("scale") ? c.f("scale", 0) : 1.0 / std::sqrt((double)d);
  const uint32_t root = m.scalar(std::sqrt(scale), t);
  uint32_t qk = e.op(OpId::k_matmul, {e.op(OpId::k_mul, {q, root}), e.permute(e.op(OpId::k_mul, {k, root}), {0, 1, 3, 2})});
  const double softcap = c.f("softcap", 0);
  if (softcap > 0) qk = e.op(OpId::k_mul, {e.op(OpId::k_tanh, {e.op(OpId::k_div, {qk, m.scalar(softcap, t)})}), m.scalar(softcap, t)});
  const uint32_t scores = bias == kNone ? qk : e.op(OpId::k_add, {qk, bias});

  DType precision = t;
  if (c.has("softmax_precision") && !dtype_of((int32_t)c.i("softmax_precision", 1), precision))
    c.unsupported("softmax_precision " + onnx_type_name((int32_t)c.i("softmax_precision", 1)));
  if (!is_floating(precision)) c.bad("softmax_precision must name a floating-point type");
  if (precision == DType::kFloat16) precision = DType::kFloat32;
  uint32_t probs = precision == DType::kBFloat16 ? softmax_bfloat16_steps(c, scores, -1)  // NOTE [ONNX carried types]
                                                  : e.op(OpId::k_softmax, {m.cast_to(c, scores, precision)}, Attrs::of(int64_t{-1}));
  if (bias != kNone) {  // a row whose bias is -inf everywhere attends nothing: zeros
    const uint32_t row_max = e.op(OpId::k_max, {bias}, Attrs::of(std::vector<int64_t>{-1}, true));
    const uint32_t empty = e.op(OpId::k_eq, {row_max, m.scalar(-INFINITY, t)});
    probs = e.op(OpId::k_where, {empty, m.scalar(0, precision), probs});
  }
  probs = m.cast_to(c, probs, t);
  uint32_t y = e.op(OpId::k_matmul, {probs, v});
  if (rank == 3) {
    const Shape ys = m.shape(y);
    y = m.reshape(c, e.permute(y, {0, 2, 1, 3}), {ys[0], ys[2], ys[1] * ys[3]});
  }
  const int64_t mode = c.i("qk_matmul_output_mode", 0);
  if (mode < 0 || mode > 3) c.bad("qk_matmul_output_mode " + std::to_string(mode) + " (0 to 3)");
  const uint32_t qk_out = mode == 3 ? probs : mode == 2 ? scores : qk;
  return {m.cast_to(c, y, io), present_k, present_v, m.cast_to(c, qk_out, io)};
}

}  // namespace

void add_attention_ops(HandlerTable& t) { t["Attention"] = attention; }

}  // namespace spore::onnx::detail
