// LLM blocks as registry ops: rms_norm, rope, attention, kv_cache_write (NOTE [LLM blocks] in
// docs/design.md). Inference checks every shape and dtype here, so the kernels
// (each backend's) can assume them; backward rules are written with ops (attention's calls its
// gradient kernel, attention_grad: NOTE [LLM gradients]).
#include <cmath>

#include "describe.h"
#include "op_families.h"
#include "spore/llm.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

bool is_cache_dtype(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32; }

// ---- rms_norm -------------------------------------------------------------------------------
void infer_rms_norm(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &w = a.inputs[1];
  if (!is_floating(x.dtype()) || !is_floating(w.dtype()))
    op_error(a.def, ErrorCode::kDType, "needs floating inputs, got " + describe(x) + " and " + describe(w));
  if (x.ndim() == 0) op_error(a.def, ErrorCode::kShape, "x must have at least one axis, got " + describe(x));
  if (w.ndim() != 1 || w.shape()[0] != x.shape()[x.ndim() - 1])
    op_error(a.def, ErrorCode::kShape,
             "weight must be 1-D with x's last extent " + std::to_string(x.shape()[x.ndim() - 1]) +
                 ", got " + describe(w));
  if (!(a.attrs.f(0) >= 0)) op_error(a.def, ErrorCode::kValue, "eps must be >= 0");
  const DType t = promote_types(x.dtype(), w.dtype());
  out.outputs[0] = {x.shape(), t};
  out.compute = t;
}

// y = x * r * w with r = rsqrt(mean(x^2) + eps):
// dw = sum over rows of g * x * r; dx = r * (gw - xhat * mean(gw * xhat)), xhat = x * r.
std::vector<Tensor> rms_norm_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &w = b.inputs[1], &g = b.grad_outputs[0];
  const Tensor r = rsqrt(add(mean(mul(x, x), {-1}, true), b.attrs.f(0)));
  const Tensor xhat = mul(x, r);
  Tensor dx, dw;
  if (b.needs(0)) {
    const Tensor gw = mul(g, w);
    dx = mul(r, sub(gw, mul(xhat, mean(mul(gw, xhat), {-1}, true))));
  }
  if (b.needs(1)) dw = sum_to(mul(g, xhat), w.shape());
  return {dx, dw};
}

// ---- rope -----------------------------------------------------------------------------------
void infer_rope(const InferArgs& a, Inference& out) {
  const Tensor &x = a.inputs[0], &pos = a.inputs[1], &freq = a.inputs[2];
  if (!is_floating(x.dtype())) op_error(a.def, ErrorCode::kDType, "x must be floating, got " + describe(x));
  if (x.ndim() < 2) op_error(a.def, ErrorCode::kShape, "x needs a sequence axis and a feature axis, got " + describe(x));
  const int axis = normalize_axis(a.attrs.i(0), x.ndim(), a.def.name);
  if (axis == x.ndim() - 1)
    op_error(a.def, ErrorCode::kValue, "seq_axis cannot be the feature (last) axis");
  if (pos.dtype() != DType::kInt64 || pos.ndim() != 1 || pos.shape()[0] != x.shape()[axis])
    op_error(a.def, ErrorCode::kShape,
             "positions must be int64 [" + std::to_string(x.shape()[axis]) + "] (one per sequence step), got " +
                 describe(pos));
  if (freq.dtype() != DType::kFloat32 || freq.ndim() != 1)
    op_error(a.def, ErrorCode::kDType, "inv_freq must be a float32 vector, got " + describe(freq));
  const int64_t d = x.shape()[x.ndim() - 1];
  if (2 * freq.shape()[0] > d || freq.shape()[0] == 0)
    op_error(a.def, ErrorCode::kShape,
             "inv_freq has " + std::to_string(freq.shape()[0]) + " frequencies; the rotary part (2 per frequency) "
             "must be non-empty and fit the feature axis of " + std::to_string(d));
  if (!(a.attrs.f(4) >= 0 && a.attrs.f(4) < 1))
    op_error(a.def, ErrorCode::kValue, "ggml_theta_scale must be in [0, 1) (0: angles as Hugging Face forms them)");
  infer_same_as_input(a, out);
}

// A rotation's transpose is the rotation by the opposite angle (with the same scale).
std::vector<Tensor> rope_backward(const BackwardArgs& b) {
  RopeOptions o{b.attrs.i(0), b.attrs.b(1), b.attrs.f(2), !b.attrs.b(3), b.attrs.f(4)};
  return {rope(b.grad_outputs[0], b.inputs[1], b.inputs[2], o), Tensor(), Tensor()};
}

// ---- attention ------------------------------------------------------------------------------
// Sliding window (keys (p - window, p] for a query at p) and soft-capping (c tanh(s / c)) of the
// scores, Mistral's and Gemma 2's; 0 turns each off. attention holds them at attributes 3 and 4,
// attention_grad at 2 and 3.
void check_window_and_cap(const InferArgs& a, int first) {
  if (a.attrs.i(first) < 0) op_error(a.def, ErrorCode::kValue, "window must be >= 0 (0: no sliding window)");
  const double cap = a.attrs.f(first + 1);
  if (!(cap >= 0) || !std::isfinite(cap))
    op_error(a.def, ErrorCode::kValue, "softcap must be finite and >= 0 (0: no soft-capping)");
}

void infer_attention(const InferArgs& a, Inference& out) {
  const Tensor &q = a.inputs[0], &k = a.inputs[1], &v = a.inputs[2];
  if (q.dtype() != DType::kFloat32 && q.dtype() != DType::kFloat64)
    op_error(a.def, ErrorCode::kDType, "q must be float32 or float64, got " + describe(q));
  for (const Tensor* t : {&k, &v}) {
    const bool ok = q.dtype() == DType::kFloat64 ? t->dtype() == DType::kFloat64 : is_cache_dtype(t->dtype());
    if (!ok)
      op_error(a.def, ErrorCode::kDType,
               "k and v must be float32, float16 or bfloat16 under a float32 q (float64 under float64), got " +
                   describe_inputs(a.inputs));
  }
  if (q.ndim() != 4 || k.ndim() != 4 || v.ndim() != 4)
    op_error(a.def, ErrorCode::kShape,
             "q, k, v must be [batch, heads, seq, head_dim], got " + describe_inputs(a.inputs));
  const int64_t B = q.shape()[0], Hq = q.shape()[1], S = q.shape()[2], D = q.shape()[3];
  const int64_t Hkv = k.shape()[1], T = k.shape()[2];
  if (k.shape()[0] != B || v.shape()[0] != B || v.shape()[1] != Hkv || v.shape()[2] != T || k.shape()[3] != D)
    op_error(a.def, ErrorCode::kShape,
             "k must be [B, Hkv, T, D] and v [B, Hkv, T, Dv] with q's B and D, got " + describe_inputs(a.inputs));
  if (Hkv == 0 || Hq % Hkv != 0)
    op_error(a.def, ErrorCode::kShape,
             "the kv heads (" + std::to_string(Hkv) + ") must divide the query heads (" + std::to_string(Hq) + ")");
  const int64_t past = a.attrs.i(1);
  if (past < 0 || past > T - S)  // (past + S could overflow)
    op_error(a.def, ErrorCode::kShape,
             std::to_string(S) + " queries from position " + std::to_string(past) + " need past + " +
                 std::to_string(S) + " keys, k has " + std::to_string(T) + " (past must be in [0, T - S])");
  if (!std::isfinite(a.attrs.f(0))) op_error(a.def, ErrorCode::kValue, "scale must be finite");
  out.outputs[0] = {Shape{B, Hq, S, v.shape()[3]}, q.dtype()};
  out.compute = q.dtype();
}

// NOTE [LLM gradients]: the rule calls attention_grad, whose kernel recomputes the probabilities
// block by block from each row's logsumexp (FlashAttention-2's backward), so no [S, T] matrix is
// ever held. k and v (a float16 / bfloat16 cache) are widened to q's dtype for it and their
// gradients narrowed back; D = rowsum(dO * O) reads the forward's output.
std::vector<Tensor> attention_backward(const BackwardArgs& b) {
  if (!b.needs(0) && !b.needs(1) && !b.needs(2)) return {Tensor(), Tensor(), Tensor()};
  const Tensor &q = b.inputs[0], &k = b.inputs[1], &v = b.inputs[2];
  const DType t = q.dtype();
  const Tensor in[] = {q, cast(k, t), cast(v, t), b.outputs[0], b.grad_outputs[0]};
  const TensorList g =
      dispatch(OpId::k_attention_grad, in, Attrs::of(b.attrs.f(0), b.attrs.i(1), b.attrs.i(3), b.attrs.f(4)));
  return {b.needs(0) ? g[0] : Tensor(), b.needs(1) ? cast(g[1], k.dtype()) : Tensor(),
          b.needs(2) ? cast(g[2], v.dtype()) : Tensor()};
}

// attention_grad(q, k, v, o, dO; scale, past, window, softcap) -> dQ, dK, dV: every input in q's dtype (float32 or
// float64), shapes as attention's with o and dO [B, Hq, S, Dv]. Key rows past past + S get zeros.
void infer_attention_grad(const InferArgs& a, Inference& out) {
  infer_attention(InferArgs{a.def, a.inputs.first(3), a.attrs}, out);
  check_window_and_cap(a, 2);
  for (const Tensor& t : a.inputs)
    if (t.dtype() != a.inputs[0].dtype())
      op_error(a.def, ErrorCode::kDType,
               "every input must have q's dtype (the rule widens a 16-bit cache first), got " +
                   describe_inputs(a.inputs));
  const Shape o = out.outputs[0].shape;
  if (a.inputs[3].shape() != o || a.inputs[4].shape() != o)
    op_error(a.def, ErrorCode::kShape,
             "the output and its gradient must both be " + o.str() + ", got " + describe_inputs(a.inputs));
  out.num_outputs = 3;
  for (int i = 0; i < 3; ++i) out.outputs[i] = {a.inputs[i].shape(), a.inputs[0].dtype()};
}

// ---- kv_cache_write -------------------------------------------------------------------------
void infer_kv_cache_write(const InferArgs& a, Inference& out) {
  const Tensor &cache = a.inputs[0], &kv = a.inputs[1];
  const bool ok = kv.dtype() == DType::kFloat64 ? cache.dtype() == DType::kFloat64
                                                : kv.dtype() == DType::kFloat32 && is_cache_dtype(cache.dtype());
  if (!ok)
    op_error(a.def, ErrorCode::kDType,
             "the cache must be float16, bfloat16 or float32 for float32 rows (float64 for float64), got " +
                 describe_inputs(a.inputs));
  if (cache.ndim() != 4 || kv.ndim() != 4 || cache.shape()[0] != kv.shape()[0] ||
      cache.shape()[1] != kv.shape()[1] || cache.shape()[3] != kv.shape()[3])
    op_error(a.def, ErrorCode::kShape,
             "cache [B, H, T, D] and new rows [B, H, S, D] must agree on B, H and D, got " + describe_inputs(a.inputs));
  const int64_t pos = a.attrs.i(0), S = kv.shape()[2], T = cache.shape()[2];
  if (pos < 0 || pos > T - S)  // (pos + S could overflow)
    op_error(a.def, ErrorCode::kShape,
             std::to_string(S) + " rows from position " + std::to_string(pos) + " do not fit a cache of " +
                 std::to_string(T) + " positions (make the cache longer or start a new sequence)");
  if (!cache.is_contiguous())
    op_error(a.def, ErrorCode::kValue, "the cache must be contiguous (it is written in place)");
  out.num_outputs = 0;
  out.compute = kv.dtype();
}

}  // namespace

void define_llm_ops(OpTable& table) {
  OpDef& rn = define(table, OpId::k_rms_norm, 2, {{"eps", AttrKind::kFloat}, {"ggml", AttrKind::kBool, true}});
  rn.facts = not_elementwise();
  rn.infer = infer_rms_norm;
  rn.promote_mask = 0b11;
  rn.backward = &rms_norm_backward;

  OpDef& rp = define(table, OpId::k_rope, 3,
                     {{"seq_axis", AttrKind::kInt}, {"interleaved", AttrKind::kBool},
                      {"scale", AttrKind::kFloat}, {"inverse", AttrKind::kBool},
                      {"ggml_theta_scale", AttrKind::kFloat, true}});
  rp.facts = not_elementwise();
  rp.infer = infer_rope;
  rp.backward = &rope_backward;

  OpDef& at = define(table, OpId::k_attention, 3,
                     {{"scale", AttrKind::kFloat}, {"past", AttrKind::kInt}, {"ggml", AttrKind::kBool, true},
                      {"window", AttrKind::kInt, true}, {"softcap", AttrKind::kFloat, true},
                      {"rows_as_decode", AttrKind::kBool, true}});
  at.facts = not_elementwise();
  at.infer = [](const InferArgs& a, Inference& out) {
    infer_attention(a, out);
    check_window_and_cap(a, 3);
    if (a.attrs.b(2) && (a.attrs.i(3) > 0 || a.attrs.f(4) > 0))
      op_error(a.def, ErrorCode::kUnsupported,
               "ggml numerics model llama.cpp's attention without a sliding window or soft-capping; "
               "use the reference numerics (ggml = false) for such a model");
  };
  at.backward = &attention_backward;

  OpDef& ag = define(table, OpId::k_attention_grad, 5,
                     {{"scale", AttrKind::kFloat}, {"past", AttrKind::kInt}, {"window", AttrKind::kInt},
                      {"softcap", AttrKind::kFloat}});
  ag.facts = not_elementwise();
  ag.infer = infer_attention_grad;
  ag.differentiable = false;  // a gradient kernel (NOTE [LLM gradients]), as conv2d_grad_input

  OpDef& kv = define(table, OpId::k_kv_cache_write, 2, {{"position", AttrKind::kInt}});
  kv.facts = not_elementwise();
  kv.infer = infer_kv_cache_write;
  kv.differentiable = false;
  kv.writes_mask = 0b1;  // the cache (NOTE [Declared effects])
}

}  // namespace spore::ops
