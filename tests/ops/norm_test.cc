// softmax and log_softmax against float64 references computed here, for every floating dtype.
#include <cmath>
#include <limits>

#include "backends/cpu/cpu_features.h"
#include "ops/reduce_test_util.h"
#include "spore/context.h"
#include "spore/op_registry.h"

namespace spore::test {
namespace {

// Reference along `axis` (normalised) of a row-major tensor.
std::vector<double> reference(const std::vector<double>& x, const std::vector<int64_t>& shape, int axis,
                              bool log) {
  int64_t outer = 1, inner = 1, L = shape.empty() ? 1 : shape[axis];
  for (int i = 0; i < (int)shape.size(); ++i) {
    if (i < axis) outer *= shape[i];
    if (i > axis) inner *= shape[i];
  }
  std::vector<double> out(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t k) { return (size_t)((o * L + k) * inner + j); };
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t k = 0; k < L; ++k) {
        nan |= std::isnan(x[at(k)]);
        m = std::max(m, x[at(k)]);
      }
      double s = 0;
      for (int64_t k = 0; k < L; ++k) s += std::exp(x[at(k)] - m);
      for (int64_t k = 0; k < L; ++k) {
        double v = log ? (x[at(k)] - m) - std::log(s) : std::exp(x[at(k)] - m) / s;
        out[at(k)] = nan ? std::numeric_limits<double>::quiet_NaN() : v;
      }
    }
  return out;
}

const DType kFloats[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64};

void check(DType dt, const std::vector<int64_t>& shape, int64_t axis, bool strided, uint32_t seed) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<double> v = random_values(n, dt, -6, 6, seed);
  std::vector<int> perm;
  for (int i = (int)shape.size() - 1; i >= 0; --i) perm.push_back(i);
  Tensor x = strided ? strided_view(v, shape, dt, perm) : native_tensor(v, Shape(shape), dt);
  const int nd = (int)shape.size();
  const int ax = nd == 0 ? 0 : (int)(axis < 0 ? axis + nd : axis);
  for (bool log : {false, true}) {
    std::string what = std::string(log ? "log_softmax " : "softmax ") + dtype_name(dt) + " shape " +
                       Shape(shape).str() + " axis " + std::to_string(axis) + (strided ? " strided" : "");
    Tensor y = log ? log_softmax(x, axis) : softmax(x, axis);
    EXPECT_EQ(y.dtype(), dt) << what;
    EXPECT_EQ(y.shape(), Shape(shape)) << what;
    expect_values(y, reference(v, shape, ax, log), tolerance(dt), what);
  }
}

TEST(Softmax, EveryDtypeAgainstReference) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const std::vector<Case> cases = {
      {{3, 4, 5}, 0}, {{3, 4, 5}, 1}, {{3, 4, 5}, 2}, {{3, 4, 5}, -1}, {{3, 4, 5}, -3},
      {{1000}, 0},    {{7, 130}, 0},  {{7, 130}, 1},  {{4, 3, 70}, 1}, {{2, 1, 9}, 1},
      {{}, 0},        {{5, 1}, -1},
  };
  for (DType dt : kFloats) {
    uint32_t seed = 1;
    for (const Case& c : cases) check(dt, c.shape, c.axis, false, seed++);
  }
}

TEST(Softmax, NonContiguousInputs) {
  for (DType dt : kFloats) {
    check(dt, {6, 9}, 0, true, 3);
    check(dt, {6, 9}, 1, true, 4);
    check(dt, {3, 4, 70}, 2, true, 5);
    check(dt, {3, 70, 4}, 1, true, 6);
  }
}

TEST(Softmax, NumericallyStable) {
  for (DType dt : {DType::kFloat32, DType::kFloat64}) {
    // Large logits: exp would overflow without subtracting the max.
    Tensor x = native_tensor({1000, 1001, 1002}, Shape{3}, dt);
    std::vector<double> ref = reference({1000, 1001, 1002}, {3}, 0, false);
    expect_values(softmax(x), ref, tolerance(dt), "softmax large");
    // log_softmax of a tiny probability keeps its value (log(softmax) would give -inf).
    Tensor y = native_tensor({0, -200}, Shape{2}, dt);
    std::vector<double> got = native_values(log_softmax(y));
    EXPECT_NEAR(got[1], -200.0, 1e-4);
    EXPECT_NEAR(got[0], 0.0, 1e-6);
    // -inf (a mask) gives probability 0; a NaN poisons its line only.
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Tensor z = native_tensor({0, -inf, 1, 2, nan, 3}, Shape{2, 3}, dt);
    std::vector<double> s = native_values(softmax(z, 1));
    EXPECT_EQ(s[1], 0);
    EXPECT_NEAR(s[0] + s[2], 1.0, 1e-6);
    for (int k = 3; k < 6; ++k) EXPECT_TRUE(std::isnan(s[k]));
    std::vector<double> ls = native_values(log_softmax(z, 1));
    EXPECT_TRUE(std::isinf(ls[1]) && ls[1] < 0);
  }
}

TEST(Softmax, RowsSumToOneOnLongRows) {
  std::vector<double> v = random_values(3 * 5000, DType::kFloat32, -20, 20, 9);
  Tensor x = native_tensor(v, Shape{3, 5000}, DType::kFloat32);
  std::vector<double> s = native_values(softmax(x));
  for (int r = 0; r < 3; ++r) {
    double t = 0;
    for (int k = 0; k < 5000; ++k) t += s[(size_t)(r * 5000 + k)];
    EXPECT_NEAR(t, 1.0, 1e-5);
  }
  expect_values(softmax(x), reference(v, {3, 5000}, 1, false), tolerance(DType::kFloat32), "long rows");
  expect_values(log_softmax(x), reference(v, {3, 5000}, 1, true), tolerance(DType::kFloat32), "long rows log");
}

TEST(Softmax, LongFloat32LinesAtEverySimdLevel) {
  // A line along the last axis runs its exponentials and their sum in the SIMD level's own loop
  // (softmax_line.h): every level against float64, lengths around the vector widths and a long
  // one, a -inf in the first line and a NaN in the second (which makes it all NaN).
  const cpu::SimdLevel saved = cpu::simd_level();
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (int64_t L : {1, 3, 15, 16, 17, 33, 18710}) {
    std::vector<double> v = random_values(2 * L, DType::kFloat32, -30, 30, 40 + (uint32_t)L);
    v[0] = -inf;
    if (L > 1) v[(size_t)(L + L / 2)] = nan;  // the second line is all NaN
    const Tensor x = native_tensor(v, Shape{2, L}, DType::kFloat32);
    const std::vector<double> want = reference(v, {2, L}, 1, false);
    for (cpu::SimdLevel level : {cpu::SimdLevel::kGeneric, cpu::SimdLevel::kAvx2, cpu::SimdLevel::kAvx512}) {
      if (level > cpu::best_simd_level()) continue;
      cpu::set_simd_level(level);
      expect_values(softmax(x, 1), want, tolerance(DType::kFloat32),
                    std::string("length ") + std::to_string(L) + " at " + cpu::simd_level_name(level));
    }
    cpu::set_simd_level(saved);
  }
}

TEST(Softmax, EmptyTensors) {
  Tensor e = native_tensor({}, Shape{0, 5}, DType::kFloat32);
  EXPECT_EQ(softmax(e, 1).shape(), Shape({0, 5}));
  EXPECT_EQ(log_softmax(e, 0).shape(), Shape({0, 5}));
  Tensor f = native_tensor({}, Shape{5, 0}, DType::kFloat32);
  EXPECT_EQ(softmax(f, 1).numel(), 0);
}

TEST(Softmax, Errors) {
  for (DType dt : {DType::kBool, DType::kInt8, DType::kUInt8, DType::kInt32, DType::kInt64}) {
    Tensor x = native_tensor({1, 0}, Shape{2}, dt);
    for (bool log : {false, true}) {
      try {
        log ? log_softmax(x) : softmax(x);
        ADD_FAILURE() << "accepted " << dtype_name(dt);
      } catch (const Error& e) {
        EXPECT_EQ(e.code(), ErrorCode::kDType);
        std::string m = e.what();
        EXPECT_NE(m.find(log ? "] log_softmax:" : "] softmax:"), std::string::npos) << m;
        EXPECT_NE(m.find(dtype_name(dt)), std::string::npos) << m;
      }
    }
  }
  Tensor x = native_tensor({1, 2, 3, 4, 5, 6}, Shape{2, 3}, DType::kFloat32);
  for (int64_t bad : {2, -3, 100}) {
    try {
      softmax(x, bad);
      ADD_FAILURE() << "axis " << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kIndex);
      EXPECT_NE(std::string(e.what()).find("softmax"), std::string::npos) << e.what();
    }
  }
}

TEST(Softmax, ResultsDoNotDependOnThreadCount) {
  ContextGuard guard;
  std::vector<double> v = random_values(512 * 1024, DType::kFloat32, -8, 8, 33);
  Tensor x = native_tensor(v, Shape{512, 1024}, DType::kFloat32);
  auto results = [&] {
    std::vector<std::vector<uint8_t>> r;
    r.push_back(raw_bytes(softmax(x, 1)));
    r.push_back(raw_bytes(softmax(x, 0)));
    r.push_back(raw_bytes(log_softmax(x, 1)));
    r.push_back(raw_bytes(log_softmax(x, 0)));
    return r;
  };
  set_num_threads(1);
  auto one = results();
  set_num_threads(2);
  auto two = results();
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(one[i], two[i]) << "result " << i;
}

TEST(Softmax, OpsAreRegistered) {
  for (OpId id : {OpId::k_softmax, OpId::k_log_softmax})
    EXPECT_EQ(op_def(id).supported_dtypes(kCpuBackend),
              (std::vector<DType>{DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}));
}

}  // namespace
}  // namespace spore::test
