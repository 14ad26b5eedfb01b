// Helpers shared by the tests: random inputs made by the test itself (std::mt19937, not Spore's
// generator), host-side float64 references and per-dtype tolerances.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "spore/ops.h"
#include "spore/tensor.h"

namespace spore::test {

// Tolerances per dtype for results computed in that dtype against a float64 reference:
// |got - ref| <= atol + rtol * |ref|. float16 has 11 significant bits, bfloat16 8.
struct Tol {
  double atol, rtol;
};
inline Tol tolerance(DType t) {
  switch (t) {
    case DType::kFloat16: return {1e-3, 2e-3};
    case DType::kBFloat16: return {1e-2, 1.6e-2};
    case DType::kFloat32: return {1e-6, 2e-6};
    case DType::kFloat64: return {1e-12, 1e-12};
    default: return {0, 0};  // integers and bool: exact
  }
}

// Values of `shape` in [lo, hi], rounded so that they are exact in `dtype` (integers for
// integer dtypes, 0/1 for bool), as float64 for the reference.
inline std::vector<double> random_values(int64_t n, DType dtype, double lo, double hi, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v((size_t)n);
  for (auto& x : v) {
    double r = dist(gen);
    if (dtype == DType::kBool) x = r > (lo + hi) / 2 ? 1 : 0;
    else if (!is_floating(dtype)) x = std::round(r);
    else if (dtype == DType::kFloat16) x = (float)Half((float)r);
    else if (dtype == DType::kBFloat16) x = (float)BFloat16((float)r);
    else if (dtype == DType::kFloat32) x = (float)r;
    else x = r;
  }
  return v;
}

// A tensor of `dtype` holding exactly `values` (which must be representable).
inline Tensor make_tensor(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return cast(Tensor::from_vector(values, shape), dtype);
}

// Compares values read back from a result of `dtype` with a float64 reference within `tol`
// (NaN matches NaN), reporting the first few offenders.
inline void expect_near(const std::vector<double>& g, const std::vector<double>& ref, Tol tol,
                        DType dtype, const std::string& what) {
  ASSERT_EQ(g.size(), ref.size()) << what;
  int bad = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    bool ok = (std::isnan(ref[i]) && std::isnan(g[i])) || g[i] == ref[i] ||
              std::abs(g[i] - ref[i]) <= tol.atol + tol.rtol * std::abs(ref[i]);
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << ", want " << ref[i]
                    << " (dtype " << dtype_name(dtype) << ")";
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << ref.size() << " elements out of tolerance";
}

// Compares a result with a float64 reference within the dtype's tolerance (or an explicit one).
inline void expect_close(const Tensor& got, const std::vector<double>& ref, Tol tol,
                         const std::string& what = "") {
  ASSERT_EQ(got.numel(), (int64_t)ref.size()) << what;
  expect_near(got.to_vector<double>(), ref, tol, got.dtype(), what);
}
inline void expect_close(const Tensor& got, const std::vector<double>& ref, const std::string& what = "") {
  expect_close(got, ref, tolerance(got.dtype()), what);
}

// Runs fn and expects a spore::Error with `code` whose message contains every one of `parts`
// (the op's name, the offending shape, the fix): the one expect_error of the suite.
inline void expect_error(const std::function<void()>& fn, ErrorCode code,
                         const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "no error thrown; expected " << error_code_name(code);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message lacks '" << p << "': " << e.what();
  }
}
// The same with the parts as separate arguments: expect_error(fn, code, "reshape", "[2, 3]").
template <typename... Parts>
void expect_error(const std::function<void()>& fn, ErrorCode code, const std::string& part,
                  const Parts&... more) {
  expect_error(fn, code, std::vector<std::string>{part, std::string(more)...});
}

// Index helpers for references: row-major strides of a shape.
// The largest |a - b| over two tensors' elements (any dtype, read as float64; a NaN on either side
// counts as infinite), and the largest |a|: the tests that compare a rewritten graph with eager.
inline double max_abs_difference(const Tensor& a, const Tensor& b) {
  const auto x = a.to(DType::kFloat64).contiguous().to_vector<double>(), y = b.to(DType::kFloat64).contiguous().to_vector<double>();
  EXPECT_EQ(x.size(), y.size());
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::isnan(x[i] - y[i]) ? INFINITY : std::abs(x[i] - y[i]));
  return m;
}

inline double max_magnitude(const Tensor& a) {
  double m = 0;
  for (double v : a.to(DType::kFloat64).contiguous().to_vector<double>()) m = std::max(m, std::abs(v));
  return m;
}

inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int i = (int)shape.size() - 2; i >= 0; --i) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

// In-test fuzzing of a file format: a copy of one of the seeds with 1 to 4 random bit flips,
// byte overwrites, truncations or insertions. xorshift64 from a fixed state, so a failing round
// reproduces.
class ByteMutator {
 public:
  explicit ByteMutator(uint64_t state) : state_(state) {}
  uint64_t next() {
    state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;
    return state_;
  }
  std::vector<uint8_t> mutate(const std::vector<std::vector<uint8_t>>& seeds) {
    std::vector<uint8_t> b = seeds[next() % seeds.size()];
    for (int k = 0, n = 1 + (int)(next() % 4); k < n && !b.empty(); ++k) {
      const size_t at = next() % b.size();
      switch (next() % 4) {
        case 0: b[at] ^= (uint8_t)(1u << (next() % 8)); break;
        case 1: b[at] = (uint8_t)next(); break;
        case 2: b.resize(at); break;
        default: b.insert(b.begin() + (long)at, (uint8_t)next()); break;
      }
    }
    return b;
  }

 private:
  uint64_t state_;
};

}  // namespace spore::test
