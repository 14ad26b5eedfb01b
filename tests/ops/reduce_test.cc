// Reductions (sum, mean, max, min, var, argmax, argmin) against float64 references computed
// here with plain loops, for every dtype each op accepts.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/reduce_test_util.h"
#include "spore/context.h"
#include "spore/op_registry.h"

namespace spore::test {
namespace {

enum class Red { kSum, kMean, kMax, kMin, kVar, kArgmax, kArgmin };

const char* red_name(Red r) {
  switch (r) {
    case Red::kSum: return "sum";
    case Red::kMean: return "mean";
    case Red::kMax: return "max";
    case Red::kMin: return "min";
    case Red::kVar: return "var";
    case Red::kArgmax: return "argmax";
    case Red::kArgmin: return "argmin";
  }
  return "?";
}

struct Ref {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

// Reference: collects each output's inputs in row-major order, then reduces the list.
// `axes` are normalised; empty means all.
Ref reference(const std::vector<double>& x, const std::vector<int64_t>& shape, std::vector<int> axes,
              bool keepdims, Red op, int64_t correction = 1) {
  const int nd = (int)shape.size();
  if (axes.empty())
    for (int i = 0; i < nd; ++i) axes.push_back(i);
  std::vector<bool> red(nd, false);
  for (int a : axes) red[a] = true;
  Ref r;
  std::vector<int64_t> kept;
  for (int i = 0; i < nd; ++i) {
    if (!red[i]) kept.push_back(shape[i]);
    if (!red[i]) r.shape.push_back(shape[i]);
    else if (keepdims) r.shape.push_back(1);
  }
  int64_t nout = 1;
  for (int64_t k : kept) nout *= k;
  std::vector<std::vector<double>> lists((size_t)nout);
  std::vector<int64_t> idx(nd, 0);
  for (size_t lin = 0; lin < x.size(); ++lin) {
    int64_t o = 0;
    for (int i = 0; i < nd; ++i)
      if (!red[i]) o = o * shape[i] + idx[i];
    lists[(size_t)o].push_back(x[lin]);
    for (int i = nd - 1; i >= 0; --i) {
      if (++idx[i] < shape[i]) break;
      idx[i] = 0;
    }
  }
  for (const auto& l : lists) {
    const double n = (double)l.size();
    double s = 0;
    for (double v : l) s += v;
    double out = 0;
    switch (op) {
      case Red::kSum: out = s; break;
      case Red::kMean: out = s / n; break;
      case Red::kVar: {
        double m = s / n, q = 0;
        for (double v : l) q += (v - m) * (v - m);
        out = q / std::max(0.0, n - (double)correction);
        break;
      }
      case Red::kMax:
      case Red::kMin: {
        out = l[0];
        for (double v : l) {
          if (std::isnan(out)) break;
          if (std::isnan(v) || (op == Red::kMax ? v > out : v < out)) out = v;
        }
        break;
      }
      case Red::kArgmax:
      case Red::kArgmin: {
        size_t best = 0;
        for (size_t k = 1; k < l.size(); ++k) {
          if (std::isnan(l[best])) break;
          if (std::isnan(l[k]) || (op == Red::kArgmax ? l[k] > l[best] : l[k] < l[best])) best = k;
        }
        out = (double)best;
        break;
      }
    }
    r.values.push_back(out);
  }
  return r;
}

Tensor run(Red op, const Tensor& x, const std::vector<int64_t>& axes, bool keepdims, int64_t corr = 1) {
  switch (op) {
    case Red::kSum: return sum(x, axes, keepdims);
    case Red::kMean: return mean(x, axes, keepdims);
    case Red::kMax: return max(x, axes, keepdims);
    case Red::kMin: return min(x, axes, keepdims);
    case Red::kVar: return var(x, axes, corr, keepdims);
    case Red::kArgmax:
      return argmax(x, axes.empty() ? std::nullopt : std::optional<int64_t>(axes[0]), keepdims);
    case Red::kArgmin:
      return argmin(x, axes.empty() ? std::nullopt : std::optional<int64_t>(axes[0]), keepdims);
  }
  return {};
}

DType expected_dtype(Red op, DType in) {
  if (op == Red::kArgmax || op == Red::kArgmin) return DType::kInt64;
  if (op == Red::kSum && !is_floating(in)) return DType::kInt64;
  return in;
}

bool accepts(Red op, DType t) {
  return is_floating(t) || !(op == Red::kMean || op == Red::kVar);
}

std::vector<int> normalized(const std::vector<int64_t>& axes, int nd) {
  std::vector<int> out;
  for (int64_t a : axes) out.push_back((int)(a < 0 ? a + nd : a));
  return out;
}

// Input values exact in `dtype`; floats spread over [-4, 4] so sums cancel a little.
std::vector<double> input_values(int64_t n, DType dtype, uint32_t seed) {
  double lo = dtype == DType::kUInt8 ? 0 : -4, hi = dtype == DType::kUInt8 ? 9 : 4;
  return random_values(n, dtype, lo, hi, seed);
}

// Tolerance for a reduction result in `out` dtype. Floating results are one rounding of a float64
// accumulation, so the dtype's own tolerance applies; var squares, so allow a little more on top.
Tol tol_for(Red op, DType out) {
  Tol t = tolerance(out);
  if (op == Red::kVar) t.rtol *= 2;
  return t;
}

void check_case(Red op, DType dtype, const std::vector<int64_t>& shape,
                const std::vector<int64_t>& axes, bool keepdims, bool strided, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v = input_values(n, dtype, seed);
  std::vector<int> perm;
  for (int i = (int)shape.size() - 1; i >= 0; --i) perm.push_back(i);  // fully transposed storage
  Tensor x = strided ? strided_view(v, shape, dtype, perm) : native_tensor(v, Shape(shape), dtype);
  std::string what = std::string(red_name(op)) + " " + dtype_name(dtype) + " shape " +
                     Shape(shape).str() + " axes " + list_str(axes) +
                     (keepdims ? " keepdims" : "") + (strided ? " strided" : "");
  Ref ref = reference(v, shape, normalized(axes, (int)shape.size()), keepdims, op);
  Tensor y = run(op, x, axes, keepdims);
  EXPECT_EQ(y.dtype(), expected_dtype(op, dtype)) << what;
  EXPECT_EQ(y.shape(), Shape(ref.shape)) << what;
  expect_values(y, ref.values, tol_for(op, y.dtype()), what);
}

const std::vector<Red> kAllReds = {Red::kSum,  Red::kMean,   Red::kMax,   Red::kMin,
                                   Red::kVar,  Red::kArgmax, Red::kArgmin};

TEST(Reduce, EveryOpEveryDtypeAgainstReference) {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, {}},      {{3, 4, 5}, {0}},     {{3, 4, 5}, {1}},  {{3, 4, 5}, {2}},
      {{3, 4, 5}, {0, 2}},  {{3, 4, 5}, {-1, -3}}, {{3, 4, 5}, {1, 2}}, {{7}, {0}},
      {{2, 1, 3}, {1}},     {{}, {}},
  };
  for (DType dt : kAllDTypes)
    for (Red op : kAllReds) {
      if (!accepts(op, dt)) continue;
      uint32_t seed = 1;
      for (const Case& c : cases) {
        const bool arg = op == Red::kArgmax || op == Red::kArgmin;
        if (arg && c.axes.size() > 1) continue;  // arg ops take one axis
        for (bool keep : {false, true}) check_case(op, dt, c.shape, c.axes, keep, false, seed++);
      }
    }
}

// Sizes that exercise the vectorised paths, their tails, column mode and chunked rows.
TEST(Reduce, LargerShapesAndLayouts) {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {
      {{37, 301}, {0}},   {{37, 301}, {1}},     {{5, 70, 9}, {1}}, {{5, 70, 9}, {0, 2}},
      {{9000}, {0}},      {{2, 9000}, {1}},     {{3, 2, 4100}, {0, 2}},
  };
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64, DType::kInt32,
                   DType::kBool})
    for (Red op : kAllReds) {
      if (!accepts(op, dt)) continue;
      uint32_t seed = 100;
      for (const Case& c : cases) {
        const bool arg = op == Red::kArgmax || op == Red::kArgmin;
        if (arg && c.axes.size() > 1) continue;
        check_case(op, dt, c.shape, c.axes, false, false, seed++);
      }
    }
}

TEST(Reduce, NonContiguousInputs) {
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  const std::vector<Case> cases = {
      {{4, 6}, {}}, {{4, 6}, {0}}, {{4, 6}, {1}}, {{3, 5, 20}, {2}}, {{3, 5, 20}, {0, 1}}, {{30, 40}, {0}},
  };
  for (DType dt : kAllDTypes)
    for (Red op : kAllReds) {
      if (!accepts(op, dt)) continue;
      uint32_t seed = 200;
      for (const Case& c : cases) {
        const bool arg = op == Red::kArgmax || op == Red::kArgmin;
        if (arg && c.axes.size() > 1) continue;
        for (bool keep : {false, true}) check_case(op, dt, c.shape, c.axes, keep, true, seed++);
      }
    }
}

// A view whose last axis has stride 1 but the reduced axis is strided and sliced: column mode
// on a view with an offset.
TEST(Reduce, ColumnModeOnSlicedView) {
  std::vector<double> v = input_values(20 * 50, DType::kFloat32, 7);
  Tensor base = native_tensor(v, Shape{20, 50}, DType::kFloat32);
  // rows 2, 5, 8, ... (step 3), columns 4..43
  Tensor x = Tensor::view_of(base.storage(), 2 * 50 + 4, Shape{6, 40}, Shape{150, 1}, DType::kFloat32);
  std::vector<double> sub;
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 40; ++c) sub.push_back(v[(size_t)((2 + 3 * r) * 50 + 4 + c)]);
  for (Red op : kAllReds) {
    Ref ref = reference(sub, {6, 40}, {0}, false, op);
    expect_values(run(op, x, {0}, false), ref.values, tol_for(op, DType::kFloat32), red_name(op));
  }
}

TEST(Reduce, SumDtypes) {
  EXPECT_EQ(sum(native_tensor({1, 0, 1}, Shape{3}, DType::kBool)).dtype(), DType::kInt64);
  EXPECT_EQ(sum(native_tensor({1, 0, 1}, Shape{3}, DType::kBool)).item<int64_t>(), 2);
  EXPECT_EQ(sum(native_tensor({100, 100, 100}, Shape{3}, DType::kInt8)).item<int64_t>(), 300);
  EXPECT_EQ(sum(native_tensor({200, 200}, Shape{2}, DType::kUInt8)).item<int64_t>(), 400);
  // int64 sums are exact beyond float64's 2^53.
  std::vector<int64_t> big = {(int64_t)1 << 60, 1, 1};
  EXPECT_EQ(sum(Tensor::from_vector(big)).item<int64_t>(), ((int64_t)1 << 60) + 2);
  EXPECT_EQ(max(Tensor::from_vector(big)).item<int64_t>(), (int64_t)1 << 60);
  EXPECT_EQ(max(native_tensor({1, 0}, Shape{2}, DType::kBool)).dtype(), DType::kBool);
  EXPECT_EQ(min(native_tensor({1, 0}, Shape{2}, DType::kFloat16)).dtype(), DType::kFloat16);
}

TEST(Reduce, MeanAndVarRefuseIntegers) {
  for (DType dt : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    Tensor x = native_tensor({1, 0, 1, 1}, Shape{4}, dt);
    for (auto fn : {+[](const Tensor& t) { return mean(t); }, +[](const Tensor& t) { return var(t); }}) {
      try {
        fn(x);
        ADD_FAILURE() << "mean/var accepted " << dtype_name(dt);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kDType);
        std::string m = e.what();
        EXPECT_TRUE(m.find("mean:") != std::string::npos || m.find("var:") != std::string::npos) << m;
        EXPECT_NE(m.find(dtype_name(dt)), std::string::npos) << m;
        EXPECT_NE(m.find("cast"), std::string::npos) << m;
      }
    }
  }
}

using test::expect_error;

TEST(Reduce, BadAxes) {
  Tensor x = native_tensor(input_values(24, DType::kFloat32, 3), Shape{2, 3, 4}, DType::kFloat32);
  expect_error([&] { sum(x, {3}); }, ErrorCode::kIndex, "sum", "3");
  expect_error([&] { mean(x, {-4}); }, ErrorCode::kIndex, "mean", "-4");
  expect_error([&] { max(x, {0, 0}); }, ErrorCode::kValue, "max", "repeated");
  expect_error([&] { min(x, {1, -2}); }, ErrorCode::kValue, "min", "repeated");
  expect_error([&] { var(x, {2, 5}); }, ErrorCode::kIndex, "var");
  expect_error([&] { argmax(x, 3); }, ErrorCode::kIndex, "argmax");
  expect_error([&] { argmin(x, -4); }, ErrorCode::kIndex, "argmin");
  expect_error([&] { var(x, {}, -1); }, ErrorCode::kValue, "var", "correction");
}

TEST(Reduce, EmptyReductions) {
  Tensor e = native_tensor({}, Shape{0, 3}, DType::kFloat32);
  Tensor s = sum(e, {0});
  EXPECT_EQ(s.shape(), Shape({3}));
  expect_values(s, {0, 0, 0}, tolerance(DType::kFloat32), "sum of empty");
  expect_values(sum(native_tensor({}, Shape{0}, DType::kInt32)), {0}, Tol{0, 0}, "int sum of empty");
  Tensor m = mean(e, {0});
  for (double v : native_values(m)) EXPECT_TRUE(std::isnan(v));
  for (double v : native_values(var(e, {0}))) EXPECT_TRUE(std::isnan(v));
  // Reducing the non-empty axis of an empty tensor is fine: an empty result.
  EXPECT_EQ(max(e, {1}).shape(), Shape({0}));
  EXPECT_EQ(sum(e, {1}).numel(), 0);
  expect_error([&] { max(e, {0}); }, ErrorCode::kValue, "max", "extent 0");
  expect_error([&] { min(e); }, ErrorCode::kValue, "min");
  expect_error([&] { argmax(e); }, ErrorCode::kValue, "argmax");
  expect_error([&] { argmin(e, 0); }, ErrorCode::kValue, "argmin");
}

TEST(Reduce, VarCorrection) {
  Tensor x = native_tensor({1, 2, 3, 4}, Shape{4}, DType::kFloat64);
  EXPECT_DOUBLE_EQ(native_values(var(x, {}, 0))[0], 1.25);
  EXPECT_DOUBLE_EQ(native_values(var(x, {}, 1))[0], 5.0 / 3);
  EXPECT_DOUBLE_EQ(native_values(var(x, {}, 3))[0], 5.0);
  // correction >= count: division by zero (inf), or NaN when every deviation is zero.
  EXPECT_TRUE(std::isinf(native_values(var(x, {}, 4))[0]));
  EXPECT_TRUE(std::isinf(native_values(var(x, {}, 9))[0]));
  Tensor one = native_tensor({3}, Shape{1}, DType::kFloat32);
  EXPECT_TRUE(std::isnan(native_values(var(one))[0]));
  EXPECT_EQ(native_values(var(one, {}, 0))[0], 0);
  // Keepdims and a large common offset (two-pass keeps precision).
  Tensor y = native_tensor({1e8 + 1, 1e8 + 2, 1e8 + 3}, Shape{1, 3}, DType::kFloat64);
  Tensor v = var(y, {1}, 1, true);
  EXPECT_EQ(v.shape(), Shape({1, 1}));
  EXPECT_DOUBLE_EQ(native_values(v)[0], 1.0);
}

TEST(Reduce, NaNHandling) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (DType dt : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    // Long enough that the contiguous 8-lane paths see the NaNs.
    std::vector<double> v(40, 1.0);
    v[5] = 3;
    v[9] = nan;
    v[17] = -2;
    v[30] = nan;
    Tensor x = native_tensor(v, Shape{40}, dt);
    EXPECT_TRUE(std::isnan(native_values(max(x))[0])) << dtype_name(dt);
    EXPECT_TRUE(std::isnan(native_values(min(x))[0])) << dtype_name(dt);
    EXPECT_TRUE(std::isnan(native_values(sum(x))[0])) << dtype_name(dt);
    EXPECT_EQ(argmax(x).item<int64_t>(), 9) << dtype_name(dt);
    EXPECT_EQ(argmin(x).item<int64_t>(), 9) << dtype_name(dt);
    // Column mode sees NaN too: [40, 8] reduced over axis 0, NaN in column 3 only.
    std::vector<double> w(40 * 8, 0.5);
    w[12 * 8 + 3] = nan;
    w[20 * 8 + 3] = 9;
    w[20 * 8 + 4] = 9;
    w[25 * 8 + 4] = 9;
    Tensor m = native_tensor(w, Shape{40, 8}, dt);
    std::vector<double> mx = native_values(max(m, {0}));
    EXPECT_TRUE(std::isnan(mx[3]));
    EXPECT_EQ(mx[4], 9);
    std::vector<double> am = native_values(argmax(m, 0));
    EXPECT_EQ(am[3], 12);
    EXPECT_EQ(am[4], 20);  // the first of two equal maxima
    EXPECT_EQ(am[0], 0);
  }
}

TEST(Reduce, ArgFirstIndexAndFlattened) {
  // Ties: the first index wins, also across chunk boundaries of long rows.
  std::vector<double> v(10000, 0);
  v[4097] = 5;
  v[9000] = 5;
  v[4000] = -5;
  v[9999] = -5;
  Tensor x = native_tensor(v, Shape{10000}, DType::kFloat32);
  EXPECT_EQ(argmax(x).item<int64_t>(), 4097);
  EXPECT_EQ(argmin(x).item<int64_t>(), 4000);
  // Flattened index of a 3-D tensor, keepdims gives all-ones shape.
  std::vector<double> w = input_values(60, DType::kInt32, 11);
  w[37] = 100;
  Tensor y = native_tensor(w, Shape{3, 4, 5}, DType::kInt32);
  Tensor a = argmax(y, std::nullopt, true);
  EXPECT_EQ(a.shape(), Shape({1, 1, 1}));
  EXPECT_EQ(a.item<int64_t>(), 37);
  // A 0-d tensor: axis 0 and -1 are accepted; the index is 0.
  Tensor s = native_tensor({3}, Shape{}, DType::kFloat32);
  EXPECT_EQ(argmax(s).item<int64_t>(), 0);
  EXPECT_EQ(argmin(s, -1).item<int64_t>(), 0);
  EXPECT_EQ(argmax(s, 0, true).shape(), Shape{});
}

TEST(Reduce, LargeFloat32SumIsAccurate) {
  const int64_t n = 1 << 20;
  std::vector<float> v((size_t)n);
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> dist(0.f, 1.f);
  double ref = 0;
  for (auto& f : v) {
    f = dist(gen);
    ref += f;
  }
  Tensor x = Tensor::from_vector(v);
  double got = sum(x).item<float>();
  EXPECT_NEAR(got, ref, 1e-6 * ref);  // one float32 rounding of a float64 sum: ~6e-8
  EXPECT_NEAR(mean(x).item<float>(), ref / n, 1e-6 * ref / n);
  // Over a column-mode layout too.
  Tensor m = Tensor::view_of(x.storage(), 0, Shape{1024, 1024}, Shape{1024, 1}, DType::kFloat32);
  std::vector<float> cols = sum(m, {0}).to_vector<float>();
  double ref0 = 0;
  for (int r = 0; r < 1024; ++r) ref0 += v[(size_t)r * 1024];
  EXPECT_NEAR(cols[0], ref0, 1e-6 * ref0);
}

TEST(Reduce, ResultsDoNotDependOnThreadCount) {
  ContextGuard guard;
  std::vector<double> v = input_values(1 << 20, DType::kFloat32, 21);
  Tensor x = native_tensor(v, Shape{1024, 1024}, DType::kFloat32);
  Tensor xt = Tensor::view_of(x.storage(), 0, Shape{1024, 1024}, Shape{1, 1024}, DType::kFloat32);
  Tensor h = native_tensor(v, Shape{1 << 20}, DType::kFloat16);
  auto results = [&] {
    std::vector<std::vector<uint8_t>> r;
    for (const Tensor& t : {x, xt}) {
      r.push_back(raw_bytes(sum(t)));
      r.push_back(raw_bytes(sum(t, {0})));
      r.push_back(raw_bytes(sum(t, {1})));
      r.push_back(raw_bytes(var(t, {0})));
      r.push_back(raw_bytes(mean(t, {1})));
      r.push_back(raw_bytes(argmax(t)));
      r.push_back(raw_bytes(argmin(t, 0)));
      r.push_back(raw_bytes(max(t, {1})));
    }
    r.push_back(raw_bytes(sum(h)));
    r.push_back(raw_bytes(var(h)));
    return r;
  };
  set_num_threads(1);
  auto one = results();
  set_num_threads(2);
  auto two = results();
  set_num_threads(4);
  auto four = results();
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i], two[i]) << "result " << i;
    EXPECT_EQ(one[i], four[i]) << "result " << i;
  }
}

TEST(Reduce, OpsAreRegistered) {
  for (OpId id : {OpId::k_sum, OpId::k_max, OpId::k_min, OpId::k_argmax, OpId::k_argmin})
    EXPECT_EQ(op_def(id).supported_dtypes(kCpuBackend).size(), (size_t)kNumDTypes) << op_def(id).name;
  for (OpId id : {OpId::k_mean, OpId::k_var})
    EXPECT_EQ(op_def(id).supported_dtypes(kCpuBackend).size(), 4u) << op_def(id).name;
}

}  // namespace
}  // namespace spore::test
