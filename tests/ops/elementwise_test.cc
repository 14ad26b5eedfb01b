// Elementwise ops against float64 references computed here with plain loops: every op in every
// dtype it supports, broadcasting, non-contiguous views, promotion, casts, errors, thread-count
// invariance and agreement of the SIMD levels.
//
// Tolerances: test::tolerance(dtype) throughout. For float32 that is 1e-6 absolute + 2e-6
// relative, i.e. the float32 approximations of exp, log, tanh, sigmoid, silu, erf and gelu
// (NOTE [Float32 transcendentals]) must stay within ~16 ulp, and are swept over their whole range.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/ggml_exp.h"
#include "spore/context.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::make_tensor;
using test::random_values;
using Ref1 = std::function<double(double)>;
using Ref2 = std::function<double(double, double)>;
using Op1 = std::function<Tensor(const Tensor&)>;
using Op2 = std::function<Tensor(const Tensor&, const Tensor&)>;

constexpr DType kNumeric[] = {DType::kInt8,    DType::kUInt8,    DType::kInt32,   DType::kInt64,
                              DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};
constexpr DType kFloats[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

using test::expect_error;

// Flat index into an operand of shape `in` for output element `flat` of shape `out`
// (NumPy broadcasting), written independently of Spore's iterator.
int64_t bcast_index(const std::vector<int64_t>& out, const std::vector<int64_t>& in, int64_t flat) {
  std::vector<int64_t> os = test::strides_of(out), is = test::strides_of(in);
  int64_t idx = 0;
  const size_t off = out.size() - in.size();
  for (size_t d = 0; d < out.size(); ++d) {
    int64_t i = flat / os[d] % out[d];
    if (d >= off && in[d - off] != 1) idx += i * is[d - off];
  }
  return idx;
}

// A [rows, cols] tensor holding `values` (row-major logical order) as a transposed view of a
// [cols, rows] buffer: non-contiguous, non-zero strides in both axes.
Tensor transposed_view(const std::vector<double>& values, int64_t rows, int64_t cols, DType t) {
  std::vector<double> buf((size_t)(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) buf[(size_t)(j * rows + i)] = values[(size_t)(i * cols + j)];
  Tensor base = make_tensor(buf, Shape{cols, rows}, t);
  Tensor v = Tensor::view_of(base.storage(), 0, Shape{rows, cols}, Shape{1, rows}, t);
  EXPECT_FALSE(v.is_contiguous());
  return v;
}

double round_to(DType t, double v) {
  switch (t) {
    case DType::kFloat16: return (float)Half((float)v);
    case DType::kBFloat16: return (float)BFloat16((float)v);
    case DType::kFloat32: return (float)v;
    default: return v;
  }
}

// Checks a binary op in dtype t: broadcast shapes, a transposed view, and a 0-d scalar operand.
void check_binary(const char* name, const Op2& op, const Ref2& ref, DType t, double lo, double hi,
                  double blo, double bhi, DType out_dtype) {
  SCOPED_TRACE(std::string(name) + " " + dtype_name(t));
  const std::vector<int64_t> sa = {3, 1, 5}, sb = {4, 5}, so = {3, 4, 5};
  std::vector<double> va = random_values(15, t, lo, hi, 1), vb = random_values(20, t, blo, bhi, 2);
  Tensor out = op(make_tensor(va, Shape(sa), t), make_tensor(vb, Shape(sb), t));
  EXPECT_EQ(out.dtype(), out_dtype);
  ASSERT_EQ(out.shape(), Shape(so));
  std::vector<double> want(60);
  for (int64_t i = 0; i < 60; ++i)
    want[(size_t)i] = ref(va[(size_t)bcast_index(so, sa, i)], vb[(size_t)bcast_index(so, sb, i)]);
  test::expect_close(out, want, test::tolerance(out_dtype), "broadcast");

  // Non-contiguous on both sides, same shape.
  std::vector<double> vc = random_values(20, t, lo, hi, 3), vd = random_values(20, t, blo, bhi, 4);
  Tensor o2 = op(transposed_view(vc, 4, 5, t), transposed_view(vd, 4, 5, t));
  std::vector<double> w2(20);
  for (size_t i = 0; i < 20; ++i) w2[i] = ref(vc[i], vd[i]);
  test::expect_close(o2, w2, test::tolerance(out_dtype), "views");

  // Scalar (0-d) on the left, a view on the right.
  Tensor s = make_tensor({vc[0]}, Shape{}, t);
  Tensor o3 = op(s, transposed_view(vd, 4, 5, t));
  for (size_t i = 0; i < 20; ++i) w2[i] = ref(vc[0], vd[i]);
  test::expect_close(o3, w2, test::tolerance(out_dtype), "scalar");
}

void check_unary(const char* name, const Op1& op, const Ref1& ref, DType t, double lo, double hi,
                 DType out_dtype) {
  SCOPED_TRACE(std::string(name) + " " + dtype_name(t));
  std::vector<double> v = random_values(20, t, lo, hi, 7);
  std::vector<double> want(20);
  for (size_t i = 0; i < 20; ++i) want[i] = ref(v[i]);
  Tensor out = op(make_tensor(v, Shape{4, 5}, t));
  EXPECT_EQ(out.dtype(), out_dtype);
  test::expect_close(out, want, test::tolerance(out_dtype), "contiguous");
  test::expect_close(op(transposed_view(v, 4, 5, t)), want, test::tolerance(out_dtype), "view");
}

// ---- binary -----------------------------------------------------------------------------------
TEST(ElementwiseBinary, ArithmeticEveryDType) {
  for (DType t : kNumeric) {
    const bool u = t == DType::kUInt8;
    const double lo = u ? 0 : -20, hi = 20;
    check_binary("add", [](auto& a, auto& b) { return add(a, b); }, [](double a, double b) { return a + b; }, t, lo, hi, lo, hi, t);
    check_binary("sub", [](auto& a, auto& b) { return a - b; }, [](double a, double b) { return a - b; }, t, u ? 20 : lo, u ? 40 : hi, lo, hi, t);
    check_binary("mul", [](auto& a, auto& b) { return a * b; }, [](double a, double b) { return a * b; }, t, u ? 0 : -8, 8, u ? 0 : -8, 8, t);
    check_binary("maximum", [](auto& a, auto& b) { return maximum(a, b); }, [](double a, double b) { return std::max(a, b); }, t, lo, hi, lo, hi, t);
    check_binary("minimum", [](auto& a, auto& b) { return minimum(a, b); }, [](double a, double b) { return std::min(a, b); }, t, lo, hi, lo, hi, t);
    DType dt = is_floating(t) ? t : DType::kFloat32;
    check_binary("div", [](auto& a, auto& b) { return a / b; }, [dt](double a, double b) { return round_to(dt, a / b); }, t, lo, hi, 1, 9, dt);
    if (is_floating(t))
      check_binary("pow", [](auto& a, auto& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, t, 0.5, 2, -2, 2, t);
    else
      check_binary("pow", [](auto& a, auto& b) { return pow(a, b); }, [](double a, double b) { return std::pow(a, b); }, t, u ? 0 : -3, 3, 0, 4, t);
  }
}

TEST(ElementwiseBinary, ComparisonsEveryDType) {
  struct Cmp { const char* name; Op2 op; Ref2 ref; };
  const Cmp cmps[] = {
      {"eq", [](auto& a, auto& b) { return eq(a, b); }, [](double a, double b) { return double(a == b); }},
      {"ne", [](auto& a, auto& b) { return ne(a, b); }, [](double a, double b) { return double(a != b); }},
      {"lt", [](auto& a, auto& b) { return lt(a, b); }, [](double a, double b) { return double(a < b); }},
      {"le", [](auto& a, auto& b) { return le(a, b); }, [](double a, double b) { return double(a <= b); }},
      {"gt", [](auto& a, auto& b) { return gt(a, b); }, [](double a, double b) { return double(a > b); }},
      {"ge", [](auto& a, auto& b) { return ge(a, b); }, [](double a, double b) { return double(a >= b); }},
  };
  for (DType t : kAllDTypes)
    for (const Cmp& c : cmps)  // small integer range so that equal pairs occur
      check_binary(c.name, c.op, c.ref, t, 0, 3, 0, 3, DType::kBool);
}

TEST(ElementwiseBinary, BoolArithmeticAndLogical) {
  const std::vector<double> a = {0, 0, 1, 1}, b = {0, 1, 0, 1};
  Tensor ta = make_tensor(a, Shape{4}, DType::kBool), tb = make_tensor(b, Shape{4}, DType::kBool);
  test::expect_close(add(ta, tb), {0, 1, 1, 1});
  test::expect_close(mul(ta, tb), {0, 0, 0, 1});
  test::expect_close(maximum(ta, tb), {0, 1, 1, 1});
  test::expect_close(minimum(ta, tb), {0, 0, 0, 1});
  EXPECT_EQ(add(ta, tb).dtype(), DType::kBool);
  // logical ops take any dtypes, unpromoted; NaN is true.
  Tensor f = Tensor::from_vector<float>({0.f, std::nanf(""), -2.f, 0.f});
  Tensor i = Tensor::from_vector<int64_t>({3, 0, 7, 0});
  Tensor la = logical_and(f, i), lor = logical_or(f, i);
  EXPECT_EQ(la.dtype(), DType::kBool);
  test::expect_close(la, {0, 0, 1, 0});
  test::expect_close(lor, {1, 1, 1, 0});
  test::expect_close(logical_and(f, ta), {0, 0, 1, 0});
  // Broadcast and views.
  std::vector<double> v = random_values(20, DType::kInt32, -1, 1, 5);
  Tensor lv = transposed_view(v, 4, 5, DType::kInt32);
  Tensor row = make_tensor({1, 0, 1, 0, 1}, Shape{5}, DType::kUInt8);
  std::vector<double> want(20);
  for (size_t k = 0; k < 20; ++k) want[k] = (v[k] != 0) || (k % 5 % 2 == 0);
  test::expect_close(logical_or(lv, row), want);
  test::expect_close(logical_not(lv), [&] {
    std::vector<double> w;
    for (double x : v) w.push_back(x == 0);
    return w;
  }());
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    Tensor x = make_tensor({0, 1, 0, 1}, Shape{2, 2}, t);
    Tensor n = logical_not(x);
    EXPECT_EQ(n.dtype(), DType::kBool);
    test::expect_close(n, {1, 0, 1, 0});
  }
}

TEST(ElementwiseBinary, Promotion) {
  Tensor i8 = make_tensor({1, -2}, Shape{2}, DType::kInt8);
  Tensor u8 = make_tensor({200, 3}, Shape{2}, DType::kUInt8);
  Tensor i32 = make_tensor({7, 9}, Shape{2}, DType::kInt32);
  Tensor f16 = make_tensor({0.5, 1.5}, Shape{2}, DType::kFloat16);
  Tensor bf = make_tensor({2, 4}, Shape{2}, DType::kBFloat16);
  Tensor b = make_tensor({1, 0}, Shape{2}, DType::kBool);
  EXPECT_EQ(add(i8, u8).dtype(), DType::kInt32);
  test::expect_close(add(i8, u8), {201, 1});
  EXPECT_EQ(add(i32, f16).dtype(), DType::kFloat16);
  test::expect_close(add(i32, f16), {7.5, 10.5});
  EXPECT_EQ(mul(f16, bf).dtype(), DType::kFloat32);
  test::expect_close(mul(f16, bf), {1, 6});
  EXPECT_EQ(add(b, i8).dtype(), DType::kInt8);
  EXPECT_EQ(div(i32, i32).dtype(), DType::kFloat32);
  test::expect_close(div(i32, make_tensor({2, 4}, Shape{2}, DType::kInt64)), {3.5, 2.25});
  EXPECT_EQ(lt(i8, f16).dtype(), DType::kBool);
  test::expect_close(lt(u8, i8), {0, 0});
  // Scalars take the tensor's dtype within its category (NOTE [Type promotion]).
  EXPECT_EQ(add(i32, 2).dtype(), DType::kInt32);
  test::expect_close(add(i32, 2), {9, 11});
  EXPECT_EQ(add(i32, 2.5).dtype(), DType::kFloat32);
  test::expect_close(add(i32, 2.5), {9.5, 11.5});
  EXPECT_EQ((f16 * 2.5).dtype(), DType::kFloat16);
  test::expect_close(f16 * 2.5, {1.25, 3.75});
  EXPECT_EQ(add(b, 1).dtype(), DType::kInt64);
  test::expect_close(add(b, 1), {2, 1});
  test::expect_close(sub(f16, 1), {-0.5, 0.5});
  test::expect_close(div(i32, 2), {3.5, 4.5});
  test::expect_close(pow(i32, 2), {49, 81});
  EXPECT_EQ(scalar_like(u8, 3).dtype(), DType::kUInt8);
  EXPECT_EQ(scalar_like(u8, 3).ndim(), 0);
}

TEST(ElementwiseBinary, IntegerEdgeCasesAreDefined) {
  // Wrap-around, never signed-overflow UB (the sanitizer build runs this).
  const int32_t imax = std::numeric_limits<int32_t>::max(), imin = std::numeric_limits<int32_t>::min();
  Tensor a = Tensor::from_vector<int32_t>({imax, imin, imin});
  Tensor one = Tensor::from_vector<int32_t>({1, 1, -1});
  EXPECT_EQ(add(a, one).to_vector<int32_t>(), (std::vector<int32_t>{imin, imin + 1, imax}));
  EXPECT_EQ(mul(a, Tensor::from_vector<int32_t>({2, 2, -1})).to_vector<int32_t>(),
            (std::vector<int32_t>{-2, 0, imin}));
  EXPECT_EQ(neg(a).to_vector<int32_t>(), (std::vector<int32_t>{-imax, imin, imin}));
  EXPECT_EQ(abs(a).to_vector<int32_t>(), (std::vector<int32_t>{imax, imin, imin}));
  Tensor l = Tensor::from_vector<int64_t>({std::numeric_limits<int64_t>::max(), 3});
  EXPECT_EQ(add(l, Tensor::scalar<int64_t>(1)).to_vector<int64_t>()[0], std::numeric_limits<int64_t>::min());
  // Integer pow: negative exponents truncate like PyTorch; big powers wrap.
  Tensor base = Tensor::from_vector<int64_t>({2, 1, -1, -1, 0, 3});
  Tensor e = Tensor::from_vector<int64_t>({-1, -5, -3, -2, -1, 41});
  int64_t p41 = 1;
  for (int i = 0; i < 41; ++i) p41 = (int64_t)((uint64_t)p41 * 3u);
  EXPECT_EQ(pow(base, e).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, -1, 1, 0, p41}));
  EXPECT_EQ(pow(Tensor::from_vector<uint8_t>({3}), Tensor::from_vector<uint8_t>({5})).to_vector<uint8_t>()[0],
            (uint8_t)243);
}

TEST(ElementwiseBinary, PowByTwoIsTheCorrectlyRoundedSquare) {
  // An exponent of 2 runs as a product (NumPy's and PyTorch's special case): x * x rounded once,
  // which is the float64 square rounded to float32; special values as pow defines them.
  const float nan = std::nanf(""), inf = INFINITY, tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> x = {1.1f, -3.7f, 0.0f, -0.0f, inf, -inf, nan, tiny, 1e20f, 3.0e-20f, 65504.5f, -1.0f};
  for (int i = 0; i < 200; ++i) x.push_back(std::ldexp(1.0f + (float)i / 173.0f, i % 40 - 20) * (i % 2 ? -1.0f : 1.0f));
  const Tensor t = Tensor::from_vector(x);
  for (const Tensor& got : {pow(t, Tensor::scalar(2.0f)), pow(t, Tensor::from_vector<float>(std::vector<float>(x.size(), 2.0f)))}) {
    const std::vector<float> v = got.to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) {
      const float want = (float)((double)x[i] * (double)x[i]);
      if (std::isnan(x[i])) EXPECT_TRUE(std::isnan(v[i]));
      else EXPECT_EQ(v[i], want) << "x = " << x[i];
      if (!std::isnan(x[i])) EXPECT_FALSE(std::signbit(v[i])) << "x = " << x[i];
    }
  }
  // Other exponents still go through pow.
  EXPECT_EQ(pow(Tensor::from_vector<float>({2.0f}), Tensor::scalar(3.0f)).to_vector<float>()[0], 8.0f);
  EXPECT_EQ(pow(Tensor::from_vector<float>({-8.0f}), Tensor::scalar(0.5f)).to_vector<float>()[0] !=
                pow(Tensor::from_vector<float>({-8.0f}), Tensor::scalar(0.5f)).to_vector<float>()[0],
            true);  // NaN: a negative base to a non-integer power
}

TEST(ElementwiseBinary, FloatSpecialValues) {
  const float nan = std::nanf(""), inf = INFINITY;
  Tensor a = Tensor::from_vector<float>({nan, 1, -inf, 2});
  Tensor b = Tensor::from_vector<float>({1, nan, 3, inf});
  std::vector<float> mx = maximum(a, b).to_vector<float>(), mn = minimum(a, b).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mn[0]) && std::isnan(mn[1]));
  EXPECT_EQ(mx[2], 3);
  EXPECT_EQ(mx[3], inf);
  EXPECT_EQ(mn[2], -inf);
  test::expect_close(eq(a, a), {0, 1, 1, 1});
  test::expect_close(ne(a, a), {1, 0, 0, 0});
  test::expect_close(div(Tensor::from_vector<float>({1, -1, 0}), Tensor::from_vector<float>({0, 0, 0})),
                     {INFINITY, -INFINITY, NAN});
}

TEST(ElementwiseBinary, Errors) {
  Tensor a = zeros({2, 3}), b = zeros({4});
  expect_error([&] { add(a, b); }, ErrorCode::kShape, "add");
  expect_error([&] { lt(a, b); }, ErrorCode::kShape, "lt");
  expect_error([&] { logical_and(a, b); }, ErrorCode::kShape, "logical_and");
  Tensor t = zeros({2}, DType::kBool);
  expect_error([&] { sub(t, t); }, ErrorCode::kDType, "sub");
  expect_error([&] { pow(t, t); }, ErrorCode::kDType, "pow");
  expect_error([&] { neg(t); }, ErrorCode::kDType, "neg");
  expect_error([&] { relu(t); }, ErrorCode::kDType, "relu");
  expect_error([&] { where(zeros({4}), a, a); }, ErrorCode::kShape, "where");
  expect_error([&] { add(a, Tensor()); }, ErrorCode::kValue, "add");
  expect_error([&] { dispatch1(OpId::k_cast, {a}, Attrs{int64_t{3}}); }, ErrorCode::kValue, "cast");
}

// ---- unary ------------------------------------------------------------------------------------
double ref_gelu(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double ref_gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

struct UnaryCase {
  const char* name;
  Op1 op;
  Ref1 ref;
  double lo, hi;
};
const std::vector<UnaryCase>& float_unaries() {
  static const std::vector<UnaryCase> cases = {
      {"exp", [](auto& x) { return exp(x); }, [](double x) { return std::exp(x); }, -10, 10},
      {"log", [](auto& x) { return log(x); }, [](double x) { return std::log(x); }, 0.01, 100},
      {"sqrt", [](auto& x) { return sqrt(x); }, [](double x) { return std::sqrt(x); }, 0, 100},
      {"rsqrt", [](auto& x) { return rsqrt(x); }, [](double x) { return 1 / std::sqrt(x); }, 0.01, 100},
      {"sin", [](auto& x) { return sin(x); }, [](double x) { return std::sin(x); }, -10, 10},
      {"cos", [](auto& x) { return cos(x); }, [](double x) { return std::cos(x); }, -10, 10},
      {"tanh", [](auto& x) { return tanh(x); }, [](double x) { return std::tanh(x); }, -5, 5},
      {"sigmoid", [](auto& x) { return sigmoid(x); }, [](double x) { return 1 / (1 + std::exp(-x)); }, -10, 10},
      {"erf", [](auto& x) { return erf(x); }, [](double x) { return std::erf(x); }, -4, 4},
      {"gelu", [](auto& x) { return gelu(x); }, ref_gelu, -6, 6},
      {"gelu_tanh", [](auto& x) { return gelu(x, true); }, ref_gelu_tanh, -6, 6},
      {"silu", [](auto& x) { return silu(x); }, [](double x) { return x / (1 + std::exp(-x)); }, -10, 10},
  };
  return cases;
}

TEST(ElementwiseUnary, FloatOpsEveryDType) {
  for (const UnaryCase& c : float_unaries()) {
    for (DType t : kFloats)
      check_unary(c.name, c.op, [&](double x) { return round_to(t, c.ref(x)); }, t, c.lo, c.hi, t);
    // Integers compute in float32.
    double ilo = std::max(c.lo, -4.0), ihi = std::min(c.hi, 4.0);
    if (c.lo > 0) ilo = 1;
    check_unary(c.name, c.op, [&](double x) { return (double)(float)c.ref(x); }, DType::kInt32, ilo, ihi, DType::kFloat32);
  }
  check_unary("exp(bool)", [](auto& x) { return exp(x); }, [](double x) { return (double)(float)std::exp(x); }, DType::kBool, 0, 1, DType::kFloat32);
}

TEST(ElementwiseUnary, KeepDTypeOps) {
  for (DType t : kNumeric) {
    const double lo = t == DType::kUInt8 ? 0 : -9;
    check_unary("neg", [](auto& x) { return -x; }, [t](double x) { return t == DType::kUInt8 ? std::fmod(256 - x, 256) : -x; }, t, lo, 9, t);
    check_unary("abs", [](auto& x) { return abs(x); }, [](double x) { return std::abs(x); }, t, lo, 9, t);
    check_unary("relu", [](auto& x) { return relu(x); }, [](double x) { return std::max(x, 0.0); }, t, lo, 9, t);
    check_unary("relu6", [](auto& x) { return relu6(x); }, [](double x) { return std::min(std::max(x, 0.0), 6.0); }, t, lo, 9, t);
    check_unary("round", [](auto& x) { return round(x); }, [](double x) { return std::nearbyint(x); }, t, lo, 9, t);
  }
  Tensor b = make_tensor({0, 1}, Shape{2}, DType::kBool);
  EXPECT_EQ(abs(b).dtype(), DType::kBool);
  test::expect_close(abs(b), {0, 1});
  std::vector<float> r = relu(Tensor::from_vector<float>({std::nanf(""), -1.f})).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 0.f);
}

// round is half to even at every half, whole beyond 2^23 (2^52), and keeps -0, the infinities and
// NaN: numpy's rint, computed here in float64 by its definition (no library rounding).
TEST(ElementwiseUnary, RoundIsHalfToEven) {
  const std::vector<double> xs = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, 3.7, -3.7,
                                  8388609.0, 4503599627370497.0, 1e30, -0.0, INFINITY, -INFINITY, NAN};
  auto rint_by_definition = [](double x) {
    if (!std::isfinite(x) || std::fabs(x) >= 4503599627370496.0) return x;
    const double f = std::floor(x), frac = x - f;
    const bool up = frac > 0.5 || (frac == 0.5 && std::fmod(f, 2.0) != 0);
    const double r = up ? f + 1 : f;
    return r == 0 ? std::copysign(0.0, x) : r;
  };
  for (DType t : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    SCOPED_TRACE(dtype_name(t));
    const Tensor x = Tensor::from_vector(xs).to(t);
    const std::vector<double> in = x.to(DType::kFloat64).to_vector<double>();
    const Tensor y = round(x);
    ASSERT_EQ(y.dtype(), t);
    const std::vector<double> got = y.to(DType::kFloat64).to_vector<double>();
    for (size_t i = 0; i < in.size(); ++i) {
      const double want = rint_by_definition(in[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got[i])) << in[i];
      } else {
        EXPECT_EQ(got[i], want) << in[i];
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want)) << in[i];
      }
    }
  }
  test::expect_error([] { round(make_tensor({0, 1}, Shape{2}, DType::kBool)); }, ErrorCode::kDType, "round", "bool");
}

// ggml's exp (NOTE [LLM numerics]): within 2.5 ulp of float64 (2.2 measured) over the float range, subnormal
// results and the limits included, and the same bits in this translation unit (built for the
// baseline CPU: std::fma may be a library call) as in the silu op at every SIMD level the machine
// has (vectorised fused multiply-adds).
TEST(ElementwiseUnary, GgmlExpAccurateAndLevelIndependent) {
  std::vector<float> x;
  for (double v = -104; v <= 88.7; v += 0.00731) x.push_back((float)v);
  int bad = 0;
  for (float v : x) {
    const double want = std::exp((double)v);
    const float got = cpu::ggml_expf(v);
    const double ulp = std::max(std::ldexp(1.0, std::ilogb(want) - 23), std::ldexp(1.0, -149));
    if (std::abs(got - want) > 2.5 * ulp && bad++ < 5) ADD_FAILURE() << "ggml_expf(" << v << ") = " << got << ", want " << want;
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(cpu::ggml_expf(0.f), 1.f);
  EXPECT_EQ(cpu::ggml_expf(89.f), INFINITY);
  EXPECT_EQ(cpu::ggml_expf(INFINITY), INFINITY);
  EXPECT_EQ(cpu::ggml_expf(-140.f), 0.f);
  EXPECT_EQ(cpu::ggml_expf(-INFINITY), 0.f);
  EXPECT_TRUE(std::isnan(cpu::ggml_expf(std::nanf(""))));
  EXPECT_GT(cpu::ggml_expf(-100.f), 0.f);  // subnormal, not flushed
  std::vector<double> xd(x.begin(), x.end());
  const Tensor tx = make_tensor(xd, Shape{(int64_t)xd.size()}, DType::kFloat32);
  const cpu::SimdLevel saved = cpu::simd_level();
  for (cpu::SimdLevel level : {cpu::SimdLevel::kGeneric, cpu::SimdLevel::kAvx2, cpu::SimdLevel::kAvx512}) {
    if (level > cpu::best_simd_level()) continue;
    cpu::set_simd_level(level);
    const std::vector<float> got = silu(tx).to_vector<float>();
    int differ = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float ref = cpu::ggml_silu(x[i]);
      if (std::memcmp(&got[i], &ref, sizeof ref) != 0 && differ++ < 3)
        ADD_FAILURE() << cpu::simd_level_name(level) << ": silu(" << x[i] << ") = " << got[i] << ", ggml_silu " << ref;
    }
  }
  cpu::set_simd_level(saved);
}

// The float32 approximations over their whole range, with the special values.
TEST(ElementwiseUnary, Float32TranscendentalSweep) {
  std::vector<double> x;
  for (double v = -110; v <= 90; v += 0.0173) x.push_back((float)v);
  for (double v : {0.0, -0.0, 1e-30, -1e-30, 1e-40, 0.999, 1.0, -1.0, 0.625, -0.625, 1.4142135, -1.4142135})
    x.push_back((float)v);
  Tensor tx = make_tensor(x, Shape{(int64_t)x.size()}, DType::kFloat32);
  const test::Tol tol = test::tolerance(DType::kFloat32);
  auto check = [&](const char* name, const Tensor& got, const Ref1& ref, double lo, double hi) {
    std::vector<double> g = got.to_vector<double>();
    int bad = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] < lo || x[i] > hi) continue;
      double w = ref(x[i]);
      if (!std::isfinite(w) && w == g[i]) continue;
      if (std::abs(g[i] - w) > tol.atol + tol.rtol * std::abs(w) && bad++ < 5)
        ADD_FAILURE() << name << "(" << x[i] << ") = " << g[i] << ", want " << w;
    }
    EXPECT_EQ(bad, 0) << name;
  };
  check("exp", exp(tx), [](double v) { return (double)(float)std::exp(v); }, -110, 88.7);
  check("tanh", tanh(tx), [](double v) { return std::tanh(v); }, -110, 90);
  check("sigmoid", sigmoid(tx), [](double v) { return 1 / (1 + std::exp(-v)); }, -87, 90);
  check("silu", silu(tx), [](double v) { return v / (1 + std::exp(-v)); }, -87, 90);
  check("erf", erf(tx), [](double v) { return std::erf(v); }, -110, 90);
  check("gelu", gelu(tx), ref_gelu, -110, 90);
  check("gelu_tanh", gelu(tx, true), ref_gelu_tanh, -80, 90);
  // log over many binades, subnormals included.
  std::vector<double> p;
  for (double v = -140; v < 128; v += 0.0371) p.push_back((float)std::exp2(v));
  Tensor tp = make_tensor(p, Shape{(int64_t)p.size()}, DType::kFloat32);
  std::vector<double> lg = log(tp).to_vector<double>();
  int bad = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    double w = std::log(p[i]);
    if (std::abs(lg[i] - w) > 1e-6 + 2e-6 * std::abs(w) && bad++ < 5)
      ADD_FAILURE() << "log(" << p[i] << ") = " << lg[i] << ", want " << w;
  }
  // Special values.
  Tensor s = Tensor::from_vector<float>({0.f, -1.f, INFINITY, -INFINITY, std::nanf("")});
  std::vector<float> l = log(s).to_vector<float>(), e = exp(s).to_vector<float>();
  EXPECT_EQ(l[0], -INFINITY);
  EXPECT_TRUE(std::isnan(l[1]));
  EXPECT_EQ(l[2], INFINITY);
  EXPECT_TRUE(std::isnan(l[4]));
  EXPECT_EQ(e[0], 1.f);
  EXPECT_EQ(e[2], INFINITY);
  EXPECT_EQ(e[3], 0.f);
  EXPECT_TRUE(std::isnan(e[4]));
  for (const Tensor& r : {tanh(s), erf(s), sigmoid(s), gelu(s), silu(s)}) EXPECT_TRUE(std::isnan(r.to_vector<float>()[4]));
  EXPECT_EQ(tanh(s).to_vector<float>()[3], -1.f);
  EXPECT_EQ(erf(s).to_vector<float>()[2], 1.f);
  EXPECT_EQ(sigmoid(s).to_vector<float>()[3], 0.f);
}

// ---- where ------------------------------------------------------------------------------------
TEST(ElementwiseWhere, BroadcastPromotionAndViews) {
  const std::vector<int64_t> sc = {3, 1, 1}, sx = {1, 4, 1}, sy = {5}, so = {3, 4, 5};
  std::vector<double> c = random_values(3, DType::kInt32, -1, 1, 11);
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> x = random_values(4, t, 0, 9, 12), y = random_values(5, DType::kInt8, 0, 9, 13);
    Tensor out = where(make_tensor(c, Shape(sc), DType::kInt32), make_tensor(x, Shape(sx), t),
                       make_tensor(y, Shape(sy), DType::kInt8));
    DType want_t = promote_types(t, DType::kInt8);
    EXPECT_EQ(out.dtype(), want_t);
    std::vector<double> want(60);
    for (int64_t i = 0; i < 60; ++i)
      want[(size_t)i] = c[(size_t)bcast_index(so, sc, i)] != 0 ? x[(size_t)bcast_index(so, sx, i)]
                                                               : y[(size_t)bcast_index(so, sy, i)];
    test::expect_close(out, want);
  }
  std::vector<double> cv = random_values(20, DType::kFloat32, -1, 1, 14), xv = random_values(20, DType::kFloat32, -5, 5, 15);
  Tensor o = where(transposed_view(cv, 4, 5, DType::kFloat32), transposed_view(xv, 4, 5, DType::kFloat32),
                   Tensor::scalar<float>(-100.f));
  std::vector<double> want(20);
  for (size_t i = 0; i < 20; ++i) want[i] = cv[i] != 0 ? xv[i] : -100;
  test::expect_close(o, want);
}

// ---- cast and copy ----------------------------------------------------------------------------
TEST(ElementwiseCast, EveryPairOfDTypes) {
  const std::vector<double> v = {0, 1, 2, 3, 5, 7, 100, 127};  // exact in every dtype
  for (DType from : kAllDTypes) {
    std::vector<double> src = v;
    if (from == DType::kBool) src = {0, 1, 1, 0, 1, 0, 0, 1};
    Tensor x = make_tensor(src, Shape{2, 4}, from);
    for (DType to : kAllDTypes) {
      SCOPED_TRACE(std::string(dtype_name(from)) + " -> " + dtype_name(to));
      Tensor y = cast(x, to);
      EXPECT_EQ(y.dtype(), to);
      std::vector<double> want = src;
      if (to == DType::kBool)
        for (double& w : want) w = w != 0;
      test::expect_close(y, want);
      test::expect_close(cast(transposed_view(src, 2, 4, from), to), want, "view");
    }
  }
}

TEST(ElementwiseCast, FloatToIntegerIsDefined) {
  // NOTE [Float to integer casts]: truncation toward zero, NaN -> 0, saturation beyond int64,
  // then wrapping like an integer cast.
  Tensor f = Tensor::from_vector<float>({2.9f, -2.9f, std::nanf(""), 1e30f, -1e30f, -1.f, 300.f, INFINITY});
  EXPECT_EQ(cast(f, DType::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{2, -2, 0, std::numeric_limits<int64_t>::max(),
                                  std::numeric_limits<int64_t>::min(), -1, 300,
                                  std::numeric_limits<int64_t>::max()}));
  std::vector<int32_t> i32 = cast(f, DType::kInt32).to_vector<int32_t>();
  EXPECT_EQ(i32[0], 2);
  EXPECT_EQ(i32[1], -2);
  EXPECT_EQ(i32[2], 0);
  EXPECT_EQ(i32[5], -1);
  std::vector<uint8_t> u8 = cast(f, DType::kUInt8).to_vector<uint8_t>();
  EXPECT_EQ(u8[5], 255);
  EXPECT_EQ(u8[6], 44);
  std::vector<int8_t> i8 = cast(Tensor::from_vector<double>({-7.99, 127.5, 128.0}), DType::kInt8).to_vector<int8_t>();
  EXPECT_EQ(i8, (std::vector<int8_t>{-7, 127, -128}));
  // float -> bool is x != 0 (NaN is true); bool reads any nonzero byte as true.
  test::expect_close(cast(Tensor::from_vector<float>({0.f, -0.f, 0.5f, std::nanf("")}), DType::kBool), {0, 0, 1, 1});
  uint8_t raw[3] = {0, 2, 255};
  Tensor b = Tensor::from_bytes(raw, Shape{3}, DType::kBool, Device::cpu());
  test::expect_close(cast(b, DType::kFloat32), {0, 1, 1});
  // Rounding to the 16-bit floats: nearest even, overflow to inf.
  std::vector<float> h = cast(cast(Tensor::from_vector<float>({1.0f + 1.0f / 4096, 70000.f, 1e-8f}), DType::kFloat16), DType::kFloat32).to_vector<float>();
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], INFINITY);
  EXPECT_EQ(h[2], 0.f);
  std::vector<float> bf = cast(cast(Tensor::from_vector<float>({1.0f + 1.0f / 256 + 1.0f / 512}), DType::kBFloat16), DType::kFloat32).to_vector<float>();
  EXPECT_EQ(bf[0], 1.0f + 1.0f / 128);
  // Same dtype: the tensor itself.
  EXPECT_TRUE(cast(f, DType::kFloat32).same_storage(f));
}

TEST(ElementwiseCopy, StridedInputAndOutput) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v = random_values(12, t, 0, 50, 21);
    Tensor view = transposed_view(v, 3, 4, t);
    Tensor c = view.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    test::expect_close(c, v);
    Tensor cl = c.clone();
    EXPECT_FALSE(cl.same_storage(c));
    test::expect_close(cl, v);
    // copy_ into a transposed view: the buffer then holds the transpose.
    Tensor buf = zeros({4, 3}, t);
    Tensor dst = Tensor::view_of(buf.storage(), 0, Shape{3, 4}, Shape{1, 3}, t);
    dst.copy_(c);
    std::vector<double> want(12);
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 4; ++j) want[(size_t)(j * 3 + i)] = v[(size_t)(i * 4 + j)];
    test::expect_close(buf, want);
  }
}

// ---- large tensors: threads and SIMD levels ---------------------------------------------------
std::vector<Tensor> run_suite(const Tensor& x, const Tensor& y, const Tensor& xt, const Tensor& row) {
  const Tensor h = cast(x, DType::kFloat16), b = cast(x, DType::kBFloat16);
  return {add(x, y),  mul(x, y),      div(x, y),        exp(x),     log(abs(x)), tanh(x),
          erf(x),     gelu(x),        gelu(x, true),    sigmoid(x), silu(x),     lt(x, y),
          relu(x),    maximum(x, y),  add(h, h),        exp(h),     mul(b, b),   tanh(b),
          h,          b,              cast(h, DType::kFloat32),     cast(x, DType::kInt32),
          where(gt(x, y), x, y),      add(x, row),      add(xt, y), xt.contiguous(),
          sin(x),     sqrt(abs(x))};
}

struct SuiteInputs {
  Tensor x, y, xt, row;
  std::vector<double> vx, vy;
};
SuiteInputs suite_inputs() {
  SuiteInputs s;
  const int64_t n = 300;
  s.vx = random_values(n * n, DType::kFloat32, -6, 6, 31);
  s.vy = random_values(n * n, DType::kFloat32, 0.5, 4, 32);
  s.x = make_tensor(s.vx, Shape{n, n}, DType::kFloat32);
  s.y = make_tensor(s.vy, Shape{n, n}, DType::kFloat32);
  s.xt = transposed_view(s.vx, n, n, DType::kFloat32);
  s.row = make_tensor(random_values(n, DType::kFloat32, -1, 1, 33), Shape{n}, DType::kFloat32);
  return s;
}

std::vector<uint8_t> bytes_of(const Tensor& t) { return t.to_bytes(); }

TEST(ElementwiseLarge, SameBitsForEveryThreadCount) {
  SuiteInputs in = suite_inputs();
  ContextGuard guard;
  set_num_threads(1);
  std::vector<Tensor> one = run_suite(in.x, in.y, in.xt, in.row);
  for (int threads : {2, 3, 5}) {
    set_num_threads(threads);
    std::vector<Tensor> many = run_suite(in.x, in.y, in.xt, in.row);
    ASSERT_EQ(many.size(), one.size());
    for (size_t i = 0; i < one.size(); ++i)
      EXPECT_EQ(bytes_of(one[i]), bytes_of(many[i])) << "result " << i << " with " << threads << " threads";
  }
  // And the values are right (the float32 ones against float64).
  std::vector<double> want(in.vx.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::tanh(in.vx[i]);
  test::expect_close(one[5], want, "tanh");
  const std::vector<double> r = in.row.to_vector<double>();
  for (size_t i = 0; i < want.size(); ++i) want[i] = (double)(float)(in.vx[i] + r[i % 300]);
  test::expect_close(one[23], want, "broadcast row");
  for (size_t i = 0; i < want.size(); ++i) want[i] = (double)(float)(in.vx[i] + in.vy[i]);
  test::expect_close(one[24], want, "transposed view");
}

TEST(ElementwiseLarge, SimdLevelsAgree) {
  using cpu::SimdLevel;
  SuiteInputs in = suite_inputs();
  const SimdLevel saved = cpu::simd_level();
  cpu::set_simd_level(SimdLevel::kGeneric);
  std::vector<Tensor> ref = run_suite(in.x, in.y, in.xt, in.row);
  for (SimdLevel level : {SimdLevel::kAvx2, SimdLevel::kAvx512}) {
    if (level > cpu::best_simd_level()) continue;
    cpu::set_simd_level(level);
    SCOPED_TRACE(cpu::simd_level_name(level));
    std::vector<Tensor> got = run_suite(in.x, in.y, in.xt, in.row);
    for (size_t i = 0; i < ref.size(); ++i) {
      ASSERT_EQ(got[i].dtype(), ref[i].dtype());
      test::expect_close(got[i], ref[i].to_vector<double>(), "result " + std::to_string(i));
    }
  }
  cpu::set_simd_level(saved);
  std::printf("[          ] SIMD levels compared up to %s\n", cpu::simd_level_name(cpu::best_simd_level()));
}

TEST(ElementwiseMaxAbsDiff, BroadcastAndSpecialValues) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor b = Tensor::from_vector<double>({1, 2.5});
  EXPECT_DOUBLE_EQ(max_abs_diff(a, b), 2.0);
  EXPECT_EQ(max_abs_diff(a, a), 0.0);
  Tensor n = Tensor::from_vector<float>({NAN, INFINITY});
  EXPECT_EQ(max_abs_diff(n, n), 0.0);
  EXPECT_TRUE(std::isnan(max_abs_diff(n, Tensor::from_vector<float>({1, INFINITY}))));
  expect_error([&] { max_abs_diff(a, zeros({3})); }, ErrorCode::kShape, "max_abs_diff");
}

}  // namespace
}  // namespace spore
