// Definitions of the elementwise ops: schema, promotion and inference (NOTE [Op registry]).
// Shapes broadcast like NumPy; dtypes follow NOTE [Type promotion] in include/spore/dtype.h.
//
// NOTE [Elementwise dtypes]
// * add sub mul pow maximum minimum: the promoted dtype. On bool, add/maximum are "or" and
//   mul/minimum are "and" (PyTorch); sub and pow of bools are errors. div is true division:
//   integer and bool operands give float32.
// * eq ne lt le gt ge compute in the promoted dtype and return bool.
// * logical_and, logical_or, logical_not and where's condition take any dtype (nonzero is true)
//   and are not promoted; they return bool (where: the promoted dtype of x and y).
// * exp log sqrt rsqrt sin cos tanh sigmoid erf gelu gelu_tanh silu: floating dtypes keep theirs;
//   integer and bool inputs compute in float32 (PyTorch).
// * neg abs relu relu6 round keep integer dtypes. neg, relu, relu6 and round of bool are errors;
//   abs of bool is the identity. round is half to even (ONNX Round, numpy's rint); on integers,
//   the identity.
// * cast converts to any dtype (NOTE [Float to integer casts]); copy keeps the dtype.
// Backward rules: NOTE [Elementwise gradients] below.
#include <numbers>

#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {

constexpr uint32_t kFirst = 1u, kFirstTwo = 3u;

bool is_op(const OpDef& d, OpId id) { return d.id == id; }

void infer_binary(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  DType t = promote_types(x.dtype(), y.dtype());
  if (t == DType::kBool && (is_op(a.def, OpId::k_sub) || is_op(a.def, OpId::k_pow)))
    op_error(a.def, ErrorCode::kDType,
             std::string("is not defined for bool tensors (inputs ") + describe_inputs(a.inputs) +
                 "); use logical_and/logical_or/logical_not on bools, or cast them to an integer dtype first");
  if (is_op(a.def, OpId::k_div) && !is_floating(t)) t = DType::kFloat32;
  out.outputs[0] = {shape, t};
  out.compute = t;
}

void infer_compare(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  out.outputs[0] = {shape, DType::kBool};
  out.compute = promote_types(x.dtype(), y.dtype());
}

void infer_logical(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  const Tensor& y = a.inputs[1];
  Shape shape = x.shape() == y.shape() ? x.shape() : broadcast_shapes(x.shape(), y.shape(), a.def.name);
  out.outputs[0] = {shape, DType::kBool};
  out.compute = DType::kBool;  // the kernel reads each input's own dtype as truth values
}

void infer_unary_float(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  DType t = is_floating(x.dtype()) ? x.dtype() : DType::kFloat32;
  out.outputs[0] = {x.shape(), t};
  out.compute = t;
}

void infer_unary_keep(const InferArgs& a, Inference& out) {
  const Tensor& x = a.inputs[0];
  if (x.dtype() == DType::kBool && !is_op(a.def, OpId::k_abs))
    op_error(a.def, ErrorCode::kDType,
             "is not defined for bool tensors (input " + describe_inputs(a.inputs) +
                 "); use logical_not for bools, or cast to an integer or float dtype first");
  out.outputs[0] = {x.shape(), x.dtype()};
  out.compute = x.dtype();
}

void infer_logical_not(const InferArgs& a, Inference& out) {
  out.outputs[0] = {a.inputs[0].shape(), DType::kBool};
  out.compute = a.inputs[0].dtype();
}

void infer_where(const InferArgs& a, Inference& out) {
  const Tensor& c = a.inputs[0];
  const Tensor& x = a.inputs[1];
  const Tensor& y = a.inputs[2];
  Shape shape = broadcast_shapes(broadcast_shapes(c.shape(), x.shape(), a.def.name), y.shape(),
                                 a.def.name);
  DType t = promote_types(x.dtype(), y.dtype());
  out.outputs[0] = {shape, t};
  out.compute = t;
}

void infer_cast(const InferArgs& a, Inference& out) {
  out.outputs[0] = {a.inputs[0].shape(), a.attrs.dtype(0)};
  out.compute = a.inputs[0].dtype();  // the kernel is keyed by the source dtype
}

}  // namespace

// ---- backward rules (NOTE [Elementwise gradients]) -----------------------------------------
//
// NOTE [Elementwise gradients]
// Rules are written with ops, so an enclosing tape records them (gradients of gradients) and
// graph mode can differentiate with the same code. A returned gradient may have the broadcast
// output shape and the output's dtype: the tape sums it to the input's shape and casts it to the
// input's dtype (accumulate in src/autograd/tape.cc). Inputs that are not floating get no
// gradient (an undefined tensor): only floating tensors are differentiated.
// * The forward output is reused where that is cheaper: exp g*y, tanh g*(1-y^2), sigmoid
//   g*y*(1-y), sqrt g/(2y), rsqrt -g*y^3/2, div -(g/b)*y for the divisor.
// * erf, gelu, gelu_tanh and silu evaluate their derivative in at least float32 (as their
//   kernels evaluate the function) and round once to the gradient's dtype.
// * Points where the function has no derivative take PyTorch's conventions: abs has slope 0 at
//   0; relu 0 at 0; relu6 0 at 0 and at 6; maximum/minimum split the gradient half and half
//   between tied operands (a NaN operand passes the whole gradient to both, as in PyTorch).
// * pow(a, b): d/da = b*a^(b-1), taken as 0 where b == 0 (otherwise 0*inf = NaN at a == 0);
//   d/db = y*log(a), taken as 0 where a == 0 and b >= 0 (a^b is flat in b there) and NaN for
//   a < 0, where the real log is undefined. Both are PyTorch's choices.
// * where: no gradient for the condition; cast: the gradient is cast back to the input's dtype;
//   comparisons and logical ops return bool, which the tape never records, so they have none.

namespace {

using Grads = std::vector<Tensor>;

bool differentiable(const Tensor& t) { return is_floating(t.dtype()); }

// `make()` for a floating input whose gradient is wanted, "no gradient" otherwise.
template <typename F>
Tensor grad_if(const BackwardArgs& b, int i, F&& make) {
  return b.needs(i) && differentiable(b.inputs[i]) ? make() : Tensor();
}

Tensor zero_of(const Tensor& like) { return scalar_like(like, 0.0); }
Tensor one_minus(const Tensor& t) { return sub(scalar_like(t, 1.0), t); }
// The dtype a derivative is evaluated in (NOTE [Elementwise gradients]).
Tensor opmath(const Tensor& t) {
  return is_low_precision(t.dtype()) ? cast(t, DType::kFloat32) : t;
}
// g * d, with d evaluated in opmath precision, rounded once to g's dtype.
Tensor times_derivative(const Tensor& g, const Tensor& d) {
  return cast(mul(opmath(g), d), g.dtype());
}

Grads add_backward(const BackwardArgs& b) {
  const Tensor& g = b.grad_outputs[0];
  return {grad_if(b, 0, [&] { return g; }), grad_if(b, 1, [&] { return g; })};
}

Grads sub_backward(const BackwardArgs& b) {
  const Tensor& g = b.grad_outputs[0];
  return {grad_if(b, 0, [&] { return g; }), grad_if(b, 1, [&] { return neg(g); })};
}

Grads mul_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &y = b.inputs[1], &g = b.grad_outputs[0];
  // x * x (a squared error): one gradient 2 g x instead of g x twice and their sum.
  if (x.impl() == y.impl()) return {grad_if(b, 0, [&] { return mul(g, add(x, x)); }), Tensor()};
  return {grad_if(b, 0, [&] { return mul(g, y); }), grad_if(b, 1, [&] { return mul(g, x); })};
}

Grads div_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &y = b.inputs[1], &out = b.outputs[0], &g = b.grad_outputs[0];
  if (!(b.needs(0) && differentiable(x)) && !(b.needs(1) && differentiable(y))) return {};
  Tensor gx = div(g, y);  // d(x/y)/dy = -(x/y)/y = -out/y, so gy = -gx*out
  return {grad_if(b, 0, [&] { return gx; }), grad_if(b, 1, [&] { return neg(mul(gx, out)); })};
}

Grads pow_backward(const BackwardArgs& b) {
  const Tensor &x = b.inputs[0], &e = b.inputs[1], &out = b.outputs[0], &g = b.grad_outputs[0];
  return {grad_if(b, 0,
                  [&] {
                    Tensor d = mul(g, mul(e, pow(x, sub(e, 1.0))));
                    return where(eq(e, zero_of(e)), zero_of(d), d);
                  }),
          grad_if(b, 1, [&] {
            Tensor d = mul(g, mul(out, log(x)));
            Tensor flat = logical_and(eq(x, zero_of(x)), ge(e, zero_of(e)));
            return where(flat, zero_of(d), d);
          })};
}

// maximum (is_max) or minimum: the winner takes the gradient, ties split it.
Grads extremum_backward(const BackwardArgs& b, bool is_max) {
  const Tensor &x = b.inputs[0], &y = b.inputs[1], &g = b.grad_outputs[0];
  const Tensor shared = where(eq(x, y), mul(g, 0.5), g);
  const Tensor zero = zero_of(g);
  return {grad_if(b, 0, [&] { return where(is_max ? lt(x, y) : gt(x, y), zero, shared); }),
          grad_if(b, 1, [&] { return where(is_max ? gt(x, y) : lt(x, y), zero, shared); })};
}
Grads maximum_backward(const BackwardArgs& b) { return extremum_backward(b, true); }
Grads minimum_backward(const BackwardArgs& b) { return extremum_backward(b, false); }

// Unary rules: the gradient of the one input from x, y = f(x) and g.
template <Tensor (*Rule)(const Tensor& x, const Tensor& y, const Tensor& g)>
Grads unary_backward(const BackwardArgs& b) {
  const Tensor& x = b.inputs[0];
  return {grad_if(b, 0, [&] { return Rule(x, b.outputs[0], b.grad_outputs[0]); })};
}

Tensor neg_rule(const Tensor&, const Tensor&, const Tensor& g) { return neg(g); }
Tensor round_rule(const Tensor&, const Tensor&, const Tensor& g) { return zeros_like(g); }  // a step function
Tensor abs_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  const Tensor zero = zero_of(x), gz = zero_of(g);
  return where(gt(x, zero), g, where(lt(x, zero), neg(g), gz));  // sign(x) * g, 0 at 0
}
Tensor exp_rule(const Tensor&, const Tensor& y, const Tensor& g) { return mul(g, y); }
Tensor log_rule(const Tensor& x, const Tensor&, const Tensor& g) { return div(g, x); }
Tensor sqrt_rule(const Tensor&, const Tensor& y, const Tensor& g) { return div(g, mul(y, 2.0)); }
Tensor rsqrt_rule(const Tensor&, const Tensor& y, const Tensor& g) {
  return mul(mul(g, mul(y, mul(y, y))), -0.5);  // d x^(-1/2) = -x^(-3/2)/2 = -y^3/2
}
Tensor sin_rule(const Tensor& x, const Tensor&, const Tensor& g) { return mul(g, cos(x)); }
Tensor cos_rule(const Tensor& x, const Tensor&, const Tensor& g) { return neg(mul(g, sin(x))); }
Tensor tanh_rule(const Tensor&, const Tensor& y, const Tensor& g) {
  return mul(g, one_minus(mul(y, y)));
}
Tensor sigmoid_rule(const Tensor&, const Tensor& y, const Tensor& g) {
  return mul(g, mul(y, one_minus(y)));
}
Tensor erf_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  const Tensor xf = opmath(x);  // d erf = 2/sqrt(pi) * exp(-x^2)
  return times_derivative(g, mul(exp(neg(mul(xf, xf))), 2.0 * std::numbers::inv_sqrtpi));
}
Tensor relu_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  return where(gt(x, zero_of(x)), g, zero_of(g));
}
Tensor relu6_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  const Tensor inside = logical_and(gt(x, zero_of(x)), lt(x, scalar_like(x, 6.0)));
  return where(inside, g, zero_of(g));
}
Tensor gelu_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  // gelu = x * Phi(x): derivative Phi(x) + x * phi(x), phi the standard normal density.
  const Tensor xf = opmath(x);
  const Tensor cdf = mul(add(erf(mul(xf, std::numbers::sqrt2 / 2)), 1.0), 0.5);
  constexpr double inv_sqrt_2pi = std::numbers::inv_sqrtpi / std::numbers::sqrt2;
  const Tensor pdf = mul(exp(mul(mul(xf, xf), -0.5)), inv_sqrt_2pi);
  return times_derivative(g, add(cdf, mul(xf, pdf)));
}
Tensor gelu_tanh_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  // gelu_tanh = x/2 * (1 + tanh(u)), u = k*(x + c*x^3): derivative
  // (1 + t)/2 + x/2 * (1 - t^2) * k * (1 + 3c*x^2), t = tanh(u).
  constexpr double k = std::numbers::sqrt2 * std::numbers::inv_sqrtpi, c = 0.044715;
  const Tensor xf = opmath(x);
  const Tensor x2 = mul(xf, xf);
  const Tensor t = tanh(mul(mul(xf, add(mul(x2, c), 1.0)), k));
  const Tensor du = mul(add(mul(x2, 3 * c), 1.0), k);
  const Tensor d = add(mul(add(t, 1.0), 0.5), mul(mul(mul(xf, 0.5), one_minus(mul(t, t))), du));
  return times_derivative(g, d);
}
Tensor silu_rule(const Tensor& x, const Tensor&, const Tensor& g) {
  // silu = x * s, s = sigmoid(x): derivative s * (1 + x * (1 - s)).
  const Tensor xf = opmath(x);
  const Tensor s = sigmoid(xf);
  return times_derivative(g, mul(s, add(mul(xf, one_minus(s)), 1.0)));
}

Grads where_backward(const BackwardArgs& b) {
  const Tensor &c = b.inputs[0], &g = b.grad_outputs[0];
  const Tensor zero = zero_of(g);
  return {Tensor(), grad_if(b, 1, [&] { return where(c, g, zero); }),
          grad_if(b, 2, [&] { return where(c, zero, g); })};
}

Grads cast_backward(const BackwardArgs& b) {
  const Tensor& x = b.inputs[0];
  return {grad_if(b, 0, [&] { return cast(b.grad_outputs[0], x.dtype()); })};
}

Grads copy_backward(const BackwardArgs& b) {
  return {grad_if(b, 0, [&] { return b.grad_outputs[0]; })};
}

// assign(dst, src): dst's elements = src's, same dtype and shape (Tensor::copy_ brings src to
// them first); writes input 0 and has no outputs (NOTE [Declared effects]).
void infer_assign(const InferArgs& a, Inference& out) {
  const Tensor &dst = a.inputs[0], &src = a.inputs[1];
  if (dst.dtype() != src.dtype() || dst.shape() != src.shape())
    op_error(a.def, ErrorCode::kShape, "the value " + describe_inputs(a.inputs.subspan(1, 1)) +
                                           " must have the destination's dtype and shape (" +
                                           describe_inputs(a.inputs.first(1)) +
                                           "); Tensor::copy_ casts and broadcasts it for you");
  out.num_outputs = 0;
  out.compute = dst.dtype();
}

}  // namespace

// Each op's definition carries its backward rule (the same style in every family); ops with no
// gradient say so (NOTE [Declared effects]).
void define_elementwise_ops(OpTable& table) {
  // NOTE [Op facts]. In place: every op here whose output keeps its inputs' dtype runs one of the
  // CPU backend's elementwise loops (binary_loop, unary_loop and their 16-bit block forms, named
  // in the note), which read element i of each input and then write element i of the output, so
  // the output may take a dying input's buffer. That holds for gelu, gelu_tanh, erf and pow as
  // for silu and mul (the same unary_loop / binary_loop): the old in-place list's lack of them
  // was an omission, not a finding. Comparisons, logical ops and casts change the dtype (in place
  // could only apply to bool operands or a no-op cast, which the simplify pass removes), and
  // where is left out until its loop is checked for an aliased output; they say kNo.
  auto facts = [](OpDef& d, Fusion fusion, InPlace in_place, const char* onnx) {
    d.facts.fusion = fusion;
    d.facts.in_place = in_place;
    d.facts.onnx = onnx;
  };
  struct Binary {
    OpId id;
    BackwardFn rule;
    const char* onnx;
    std::optional<double> right_identity = std::nullopt, left_identity = std::nullopt;
  };
  for (Binary b : {Binary{OpId::k_add, &add_backward, "Add", 0.0, 0.0}, Binary{OpId::k_sub, &sub_backward, "Sub", 0.0},
                   Binary{OpId::k_mul, &mul_backward, "Mul", 1.0, 1.0}, Binary{OpId::k_div, &div_backward, "Div", 1.0},
                   Binary{OpId::k_pow, &pow_backward, "Pow"}, Binary{OpId::k_maximum, &maximum_backward, "Max"},
                   Binary{OpId::k_minimum, &minimum_backward, "Min"}}) {
    OpDef& d = define(table, b.id, 2);
    d.promote_mask = kFirstTwo;
    d.infer = infer_binary;
    d.backward = b.rule;
    facts(d, Fusion::kArith, InPlace::kYes, b.onnx);
    d.facts.right_identity = b.right_identity;
    d.facts.left_identity = b.left_identity;
  }
  // Comparisons and logical ops return bool: no gradient. ne has no ONNX op (Not of Equal).
  struct Named {
    OpId id;
    const char* onnx;
  };
  for (Named c : {Named{OpId::k_eq, "Equal"}, Named{OpId::k_ne, ""}, Named{OpId::k_lt, "Less"}, Named{OpId::k_le, "LessOrEqual"},
                  Named{OpId::k_gt, "Greater"}, Named{OpId::k_ge, "GreaterOrEqual"}}) {
    OpDef& d = define(table, c.id, 2);
    d.promote_mask = kFirstTwo;
    d.infer = infer_compare;
    d.differentiable = false;
    facts(d, Fusion::kCompare, InPlace::kNo, c.onnx);
  }
  for (Named l : {Named{OpId::k_logical_and, "And"}, Named{OpId::k_logical_or, "Or"}}) {
    OpDef& d = define(table, l.id, 2);
    d.infer = infer_logical;
    d.differentiable = false;
    facts(d, Fusion::kLogical, InPlace::kNo, l.onnx);
  }
  struct Unary {
    OpId id;
    BackwardFn rule;
    const char* onnx;  // "": ONNX has no op of this meaning (the writer composes it)
  };
  for (Unary u : {Unary{OpId::k_exp, &unary_backward<exp_rule>, "Exp"}, Unary{OpId::k_log, &unary_backward<log_rule>, "Log"},
                  Unary{OpId::k_sqrt, &unary_backward<sqrt_rule>, "Sqrt"}, Unary{OpId::k_rsqrt, &unary_backward<rsqrt_rule>, ""},
                  Unary{OpId::k_sin, &unary_backward<sin_rule>, "Sin"}, Unary{OpId::k_cos, &unary_backward<cos_rule>, "Cos"},
                  Unary{OpId::k_tanh, &unary_backward<tanh_rule>, "Tanh"},
                  Unary{OpId::k_sigmoid, &unary_backward<sigmoid_rule>, "Sigmoid"},
                  Unary{OpId::k_erf, &unary_backward<erf_rule>, "Erf"}, Unary{OpId::k_gelu, &unary_backward<gelu_rule>, ""},
                  Unary{OpId::k_gelu_tanh, &unary_backward<gelu_tanh_rule>, ""},
                  Unary{OpId::k_silu, &unary_backward<silu_rule>, ""}}) {
    OpDef& d = define(table, u.id, 1);
    d.promote_mask = kFirst;
    d.infer = infer_unary_float;
    d.backward = u.rule;
    facts(d, Fusion::kUnaryFloat, InPlace::kYes, u.onnx);
  }
  for (Unary u : {Unary{OpId::k_neg, &unary_backward<neg_rule>, "Neg"}, Unary{OpId::k_abs, &unary_backward<abs_rule>, "Abs"},
                  Unary{OpId::k_relu, &unary_backward<relu_rule>, "Relu"},
                  Unary{OpId::k_relu6, &unary_backward<relu6_rule>, ""},
                  Unary{OpId::k_round, &unary_backward<round_rule>, "Round"}}) {
    OpDef& d = define(table, u.id, 1);
    d.promote_mask = kFirst;
    d.infer = infer_unary_keep;
    d.backward = u.rule;
    facts(d, Fusion::kUnaryKeep, InPlace::kYes, u.onnx);
  }
  table[(int)OpId::k_neg].facts.involution = true;
  {
    OpDef& d = define(table, OpId::k_logical_not, 1);
    d.infer = infer_logical_not;
    d.differentiable = false;
    facts(d, Fusion::kLogicalNot, InPlace::kNo, "Not");
  }
  {
    OpDef& d = define(table, OpId::k_where, 3);
    d.promote_mask = 6u;  // x and y; the condition keeps its dtype
    d.infer = infer_where;
    d.backward = &where_backward;
    facts(d, Fusion::kWhere, InPlace::kNo, "Where");
  }
  {
    OpDef& d = define(table, OpId::k_cast, 1, {{"dtype", AttrKind::kDType}});
    d.infer = infer_cast;
    d.backward = &cast_backward;
    facts(d, Fusion::kCast, InPlace::kNo, "");  // ONNX's Cast carries the dtype as an attribute
  }
  {
    OpDef& d = define(table, OpId::k_copy, 1);
    d.infer = infer_same_as_input;
    d.backward = &copy_backward;
    // Elementwise, but a copy exists to make a new buffer: never fused, never in place.
    facts(d, Fusion::kNone, InPlace::kNo, "Identity");
  }
  {
    OpDef& d = define(table, OpId::k_assign, 2);
    d.infer = infer_assign;
    d.differentiable = false;  // an in-place write: the tape does not follow mutation
    d.writes_mask = 1u;
    d.facts = not_elementwise();
  }
}

}  // namespace spore::ops
