// matmul against a float64 reference computed here with plain loops (NumPy semantics written
// out by hand), for every dtype, the 1-D promotions, broadcast batches, strided views, empty
// shapes and the error cases.
//
// Tensors are built and read back with from_vector/data<T>() in their own dtype, so these tests
// exercise matmul alone, not cast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "spore/context.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::random_values;

template <typename T>
T to_type(double x) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) return T((float)x);
  else return static_cast<T>(x);
}

Tensor make(const std::vector<double>& v, const Shape& shape, DType dt) {
  return visit_dtype(dt, [&](auto tag) -> Tensor {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      Tensor t = Tensor::empty(shape, DType::kBool);
      auto* p = static_cast<uint8_t*>(t.data_ptr());
      for (size_t i = 0; i < v.size(); ++i) p[i] = v[i] != 0;
      return t;
    } else {
      std::vector<T> tv(v.size());
      for (size_t i = 0; i < v.size(); ++i) tv[i] = to_type<T>(v[i]);
      return Tensor::from_vector(tv, shape);
    }
  });
}

// Values of a contiguous result (matmul outputs are contiguous).
std::vector<double> values(const Tensor& t) {
  EXPECT_TRUE(t.is_contiguous());
  std::vector<double> out((size_t)t.numel());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = static_cast<const T*>(t.data_ptr());
    for (size_t i = 0; i < out.size(); ++i) {
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) out[i] = (float)p[i];
      else out[i] = (double)p[i];
    }
  });
  return out;
}

// The reference: NumPy matmul of row-major value arrays, with sum |a||b| per output element
// (the scale of the rounding error a floating accumulation can make).
struct Ref {
  std::vector<int64_t> shape;
  std::vector<double> value, magnitude;
};

Ref reference(const std::vector<double>& va, std::vector<int64_t> sa, const std::vector<double>& vb,
              std::vector<int64_t> sb) {
  const bool a1 = sa.size() == 1, b1 = sb.size() == 1;
  if (a1) sa.insert(sa.begin(), 1);
  if (b1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  std::vector<int64_t> ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t r = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), r - ba.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> batch(r);
  for (size_t i = 0; i < r; ++i) batch[i] = std::max(ba[i], bb[i]);
  int64_t count = 1;
  for (int64_t d : batch) count *= d;
  Ref ref;
  ref.value.assign((size_t)(count * m * n), 0.0);
  ref.magnitude.assign(ref.value.size(), 0.0);
  for (int64_t item = 0; item < count; ++item) {
    int64_t rest = item, ia = 0, ib = 0, sta = 1, stb = 1;
    for (int i = (int)r - 1; i >= 0; --i) {
      int64_t j = rest % batch[i];
      rest /= batch[i];
      ia += (ba[i] == 1 ? 0 : j) * sta;
      ib += (bb[i] == 1 ? 0 : j) * stb;
      sta *= ba[i];
      stb *= bb[i];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0, mag = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = va[(size_t)((ia * m + i) * k + p)], y = vb[(size_t)((ib * k + p) * n + j)];
          s += x * y;
          mag += std::abs(x * y);
        }
        ref.value[(size_t)((item * m + i) * n + j)] = s;
        ref.magnitude[(size_t)((item * m + i) * n + j)] = mag;
      }
  }
  ref.shape = batch;
  if (!a1) ref.shape.push_back(m);
  if (!b1) ref.shape.push_back(n);
  return ref;
}

// Integers wrap to the dtype like C++ conversions (two's complement), as NumPy's do.
double wrap(double exact, DType dt) {
  const int64_t v = (int64_t)exact;
  switch (dt) {
    case DType::kInt8: return (int8_t)v;
    case DType::kUInt8: return (uint8_t)v;
    case DType::kInt32: return (int32_t)v;
    default: return (double)v;
  }
}

// Error bound: accumulation in float32 (float64 for float64) over k terms, plus one rounding of
// the result to the output dtype.
void expect_matches(const Tensor& got, const Ref& ref, int64_t k, const std::string& what) {
  ASSERT_EQ(got.shape(), Shape(ref.shape)) << what;
  const DType dt = got.dtype();
  const std::vector<double> g = values(got);
  const double acc_eps = dt == DType::kFloat64 ? std::ldexp(1.0, -52) : std::ldexp(1.0, -23);
  const double out_eps = dt == DType::kFloat16    ? std::ldexp(1.0, -10)
                         : dt == DType::kBFloat16 ? std::ldexp(1.0, -7)
                                                  : acc_eps;
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok;
    double want = ref.value[i];
    if (!is_floating(dt)) {
      want = wrap(want, dt);
      ok = g[i] == want;
    } else {
      ok = std::abs(g[i] - want) <= out_eps * std::abs(want) + 2.0 * (double)k * acc_eps * ref.magnitude[i] + 1e-300;
    }
    if (!ok && bad++ < 5)
      ADD_FAILURE() << what << " (" << dtype_name(dt) << ") element " << i << ": got " << g[i]
                    << ", want " << want;
  }
  EXPECT_EQ(bad, 0) << what << " (" << dtype_name(dt) << "): " << bad << " of " << g.size()
                    << " elements wrong";
}

double lo_of(DType dt) { return dt == DType::kUInt8 ? 0 : -8; }
double hi_of(DType dt) { return dt == DType::kUInt8 ? 12 : 8; }
std::vector<double> rand_for(int64_t n, DType dt, uint32_t seed) {
  return random_values(n, dt, lo_of(dt), hi_of(dt), seed);
}
int64_t numel_of(const std::vector<int64_t>& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// Runs one case with contiguous operands of the given logical shapes.
void check_case(DType dt, std::vector<int64_t> sa, std::vector<int64_t> sb, uint32_t seed) {
  auto va = rand_for(numel_of(sa), dt, seed), vb = rand_for(numel_of(sb), dt, seed + 1);
  Tensor out = matmul(make(va, Shape(sa), dt), make(vb, Shape(sb), dt));
  EXPECT_EQ(out.dtype(), dt);
  expect_matches(out, reference(va, sa, vb, sb), sa.back(),
                 Shape(sa).str() + " @ " + Shape(sb).str());
}

constexpr DType kMatmulDTypes[] = {DType::kInt8,     DType::kUInt8,   DType::kInt32,
                                   DType::kInt64,    DType::kFloat16, DType::kBFloat16,
                                   DType::kFloat32,  DType::kFloat64};

TEST(MatmulTest, ChapterSample) {
  for (DType dt : {DType::kFloat16, DType::kFloat32}) {
    Tensor x = make({1, 2, 3, 4}, Shape{2, 2}, dt);
    Tensor y = matmul(x, x);
    EXPECT_EQ(y.dtype(), dt);
    EXPECT_EQ(values(y), (std::vector<double>{7, 10, 15, 22})) << dtype_name(dt);
  }
}

TEST(MatmulTest, PromotesMixedDTypes) {
  // int32 @ float32 runs in float32 (NOTE [Type promotion]); the int operand goes through cast.
  Tensor a = Tensor::from_vector(std::vector<int32_t>{1, 2, 3, 4}, Shape{2, 2});
  Tensor b = make({0.5, 1, 1.5, 2}, Shape{2, 2}, DType::kFloat32);
  Tensor c = matmul(a, b);
  EXPECT_EQ(c.dtype(), DType::kFloat32);
  EXPECT_EQ(values(c), (std::vector<double>{3.5, 5, 7.5, 11}));
  EXPECT_EQ(matmul(make({1, 2}, Shape{2}, DType::kFloat16), make({1, 2}, Shape{2}, DType::kBFloat16)).dtype(),
            DType::kFloat32);
}

TEST(MatmulTest, EveryDTypeSmallAndLarge) {
  for (DType dt : kMatmulDTypes) {
    check_case(dt, {5, 7}, {7, 3}, 1);      // direct kernel
    check_case(dt, {70, 130}, {130, 45}, 3);  // oneDNN for floats; several blocks for the rest
  }
}

TEST(MatmulTest, OneDimensionalOperands) {
  for (DType dt : kMatmulDTypes) {
    check_case(dt, {6}, {6}, 10);           // dot product: 0-d result
    check_case(dt, {4}, {4, 3}, 11);        // row vector
    check_case(dt, {3, 4}, {4}, 12);        // column vector
    check_case(dt, {4}, {2, 4, 3}, 13);     // batched, 1-D first
    check_case(dt, {2, 3, 4}, {4}, 14);     // batched, 1-D second
  }
  check_case(DType::kFloat32, {300}, {300, 200}, 15);  // large enough for oneDNN
  check_case(DType::kFloat32, {200, 300}, {300}, 16);
}

TEST(MatmulTest, OneRowProductsKeepTheBlockedOrder) {
  // A single row of A against a row-major B takes the direct kernels' row path (a recurrent
  // cell's h at each step): against float64, and bit for bit the first row of the same product
  // with a second row added (the blocked path), over one and several k blocks, batched too.
  for (DType dt : {DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kFloat32})
    for (int64_t k : {64, 300}) {
      // Over the tiny loop's 4096 multiply-adds, within the direct path's 16384 for the float types
      // oneDNN serves above that (float64 always runs direct).
      const int64_t n = k == 64 ? 100 : 50;
      check_case(dt, {1, k}, {k, n}, 70);
      check_case(dt, {3, 1, k}, {k, n}, 71);
      auto va = rand_for(2 * k, dt, 72), vb = rand_for(k * n, dt, 73);
      const Tensor b = make(vb, Shape{k, n}, dt);
      const Tensor one = matmul(make(std::vector<double>(va.begin(), va.begin() + k), Shape{1, k}, dt), b);
      const Tensor two = matmul(make(va, Shape{2, k}, dt), b);
      if (dt != DType::kFloat64 && 2 * k * n > 16384) continue;  // the two-row product goes to oneDNN
      EXPECT_EQ(std::memcmp(one.data_ptr(), two.data_ptr(), one.nbytes()), 0) << dtype_name(dt) << " k " << k;
    }
}

TEST(MatmulTest, BroadcastBatch) {
  for (DType dt : kMatmulDTypes) check_case(dt, {2, 1, 3, 4}, {5, 4, 2}, 20);
  // The same broadcast through the oneDNN path, and the dense-layer fold (b without batch).
  for (DType dt : {DType::kFloat32, DType::kBFloat16}) {
    check_case(dt, {2, 1, 24, 40}, {5, 40, 20}, 21);
    check_case(dt, {3, 1, 30, 40}, {1, 2, 40, 20}, 22);
    check_case(dt, {4, 16, 40}, {40, 32}, 23);
    check_case(dt, {40, 32}, {4, 32, 40}, 24);
    check_case(dt, {4, 1, 40}, {40, 600}, 25);
  }
}

// A [rows, cols] operand stored transposed ([cols, rows] in memory), as transpose() makes it.
Tensor transposed_view(const std::vector<double>& v, int64_t rows, int64_t cols, DType dt) {
  std::vector<double> t((size_t)(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[(size_t)(j * rows + i)] = v[(size_t)(i * cols + j)];
  Tensor base = make(t, Shape{cols, rows}, dt);
  return Tensor::view_of(base.storage(), base.offset(), Shape{rows, cols}, Shape{1, rows}, dt);
}

// A [rows, cols] operand taken as every other column of a [rows, 2 * cols + 1] tensor, at an
// offset: no unit stride, so fast paths must pack it.
Tensor strided_view(const std::vector<double>& v, int64_t rows, int64_t cols, DType dt) {
  const int64_t wide = 2 * cols + 1;
  std::vector<double> t((size_t)(rows * wide), 99.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t[(size_t)(i * wide + 2 * j + 1)] = v[(size_t)(i * cols + j)];
  Tensor base = make(t, Shape{rows, wide}, dt);
  return Tensor::view_of(base.storage(), 1, Shape{rows, cols}, Shape{wide, 2}, dt);
}

TEST(MatmulTest, StridedViews) {
  for (DType dt : kMatmulDTypes) {
    for (auto [m, k, n] : {std::array<int64_t, 3>{5, 7, 3}, std::array<int64_t, 3>{60, 90, 50}}) {
      auto va = rand_for(m * k, dt, 30), vb = rand_for(k * n, dt, 31);
      const Ref ref = reference(va, {m, k}, vb, {k, n});
      const Tensor a = make(va, Shape{m, k}, dt), b = make(vb, Shape{k, n}, dt);
      const Tensor at = transposed_view(va, m, k, dt), bt = transposed_view(vb, k, n, dt);
      const Tensor as = strided_view(va, m, k, dt), bs = strided_view(vb, k, n, dt);
      ASSERT_FALSE(at.is_contiguous());
      expect_matches(matmul(at, b), ref, k, "a^T view");
      expect_matches(matmul(a, bt), ref, k, "b^T view");
      expect_matches(matmul(at, bt), ref, k, "both ^T views");
      expect_matches(matmul(as, b), ref, k, "a strided");
      expect_matches(matmul(at, bs), ref, k, "a^T, b strided");
    }
  }
}

TEST(MatmulTest, BatchedTransposedView) {
  // b: [2, 40, 30] logically, stored as [2, 30, 40]: strides [1200, 1, 40].
  const int64_t B = 2, K = 40, N = 30, M = 20;
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt32}) {
    auto va = rand_for(B * M * K, dt, 40), vb = rand_for(B * K * N, dt, 41);
    std::vector<double> stored((size_t)(B * K * N));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n)
          stored[(size_t)(b * N * K + n * K + k)] = vb[(size_t)(b * K * N + k * N + n)];
    Tensor base = make(stored, Shape{B, N, K}, dt);
    Tensor bv = Tensor::view_of(base.storage(), 0, Shape{B, K, N}, Shape{N * K, 1, K}, dt);
    Tensor out = matmul(make(va, Shape{B, M, K}, dt), bv);
    expect_matches(out, reference(va, {B, M, K}, vb, {B, K, N}), K, "batched b^T view");
  }
}

TEST(MatmulTest, BroadcastByStrideZero) {
  // An operand expanded over the batch (stride 0), as expand() makes it.
  const DType dt = DType::kFloat32;
  auto va = rand_for(30 * 50, dt, 50), vb = rand_for(3 * 50 * 40, dt, 51);
  Tensor a = make(va, Shape{30, 50}, dt);
  Tensor ae = Tensor::view_of(a.storage(), 0, Shape{3, 30, 50}, Shape{0, 50, 1}, dt);
  std::vector<double> va3;
  for (int i = 0; i < 3; ++i) va3.insert(va3.end(), va.begin(), va.end());
  expect_matches(matmul(ae, make(vb, Shape{3, 50, 40}, dt)), reference(va3, {3, 30, 50}, vb, {3, 50, 40}),
                 50, "expanded a");
}

TEST(MatmulTest, EmptyShapes) {
  for (DType dt : {DType::kFloat32, DType::kFloat16, DType::kInt64, DType::kFloat64}) {
    // K = 0: sums of nothing are 0.
    Tensor z = matmul(make({}, Shape{3, 0}, dt), make({}, Shape{0, 4}, dt));
    EXPECT_EQ(z.shape(), (Shape{3, 4}));
    EXPECT_EQ(values(z), std::vector<double>(12, 0.0));
    Tensor d = matmul(make({}, Shape{0}, dt), make({}, Shape{0}, dt));
    EXPECT_EQ(d.shape(), Shape{});
    EXPECT_EQ(values(d), std::vector<double>{0.0});
    // Empty batch, empty rows, empty columns.
    EXPECT_EQ(matmul(make({}, Shape{0, 3, 4}, dt), make(std::vector<double>(20, 1), Shape{4, 5}, dt)).shape(),
              (Shape{0, 3, 5}));
    EXPECT_EQ(matmul(make({}, Shape{0, 4}, dt), make(std::vector<double>(20, 1), Shape{4, 5}, dt)).shape(),
              (Shape{0, 5}));
    EXPECT_EQ(matmul(make(std::vector<double>(8, 1), Shape{2, 4}, dt), make({}, Shape{4, 0}, dt)).shape(),
              (Shape{2, 0}));
  }
}

// Every matmul error names the op first.
void expect_error(const std::function<void()>& fn, ErrorCode code, std::vector<std::string> parts) {
  parts.push_back("matmul: ");
  test::expect_error(fn, code, parts);
}

TEST(MatmulTest, Errors) {
  const DType f = DType::kFloat32;
  auto t = [&](Shape s) { return make(std::vector<double>((size_t)s.numel(), 1.0), s, f); };
  expect_error([&] { matmul(t({2, 3}), t({4, 5})); }, ErrorCode::kShape, {"[2, 3]", "[4, 5]"});
  expect_error([&] { matmul(t({3}), t({4})); }, ErrorCode::kShape, {"[3]", "[4]"});
  expect_error([&] { matmul(t({2, 3}), t({2})); }, ErrorCode::kShape, {"[2, 3]", "[2]"});
  expect_error([&] { matmul(t({2, 3, 4}), t({3, 4, 5})); }, ErrorCode::kShape, {"[2, 3, 4]", "[3, 4, 5]"});
  expect_error([&] { matmul(t({}), t({3})); }, ErrorCode::kShape, {"float32[]"});
  expect_error([&] { matmul(make({1, 0, 1, 1}, Shape{2, 2}, DType::kBool), make({1, 0}, Shape{2}, DType::kBool)); },
               ErrorCode::kDType, {"bool"});
  EXPECT_THROW(matmul(Tensor(), t({2})), Error);
}

TEST(MatmulTest, ThreadCounts) {
  ContextGuard guard;
  // oneDNN float32: 1 and 2 threads agree within reassociation error; each is reproducible.
  // The direct kernels (float64, integers) are bit-identical for any thread count.
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kInt32}) {
    auto va = rand_for(3 * 64 * 200, dt, 60), vb = rand_for(200 * 96, dt, 61);
    Tensor a = make(va, Shape{3, 64, 200}, dt), b = make(vb, Shape{200, 96}, dt);
    const Ref ref = reference(va, {3, 64, 200}, vb, {200, 96});
    set_num_threads(1);
    Tensor r1 = matmul(a, b), r1b = matmul(a, b);
    set_num_threads(2);
    Tensor r2 = matmul(a, b);
    expect_matches(r1, ref, 200, "1 thread");
    expect_matches(r2, ref, 200, "2 threads");
    EXPECT_EQ(std::memcmp(r1.data_ptr(), r1b.data_ptr(), r1.nbytes()), 0) << dtype_name(dt);
    if (dt != DType::kFloat32) {
      EXPECT_EQ(std::memcmp(r1.data_ptr(), r2.data_ptr(), r1.nbytes()), 0) << dtype_name(dt);
    }
  }
}

TEST(MatmulTest, SlabsOnThePoolAtTwoThreads) {
  // NOTE [oneDNN on the pool]: at two threads a float32 product over 2^20 multiply-adds is cut
  // into single-threaded oneDNN calls: by columns (n >= 1024), by rows, with B transposed or
  // read through a padded row pitch (NOTE [Weight pitch]), and a dense layer's stacked batch.
  ContextGuard guard;
  set_num_threads(2);
  const DType f = DType::kFloat32;
  struct Case {
    int64_t m, k, n;
    const char* what;
  };
  for (const Case& c : {Case{40, 128, 1100, "columns"}, Case{300, 128, 200, "rows"}, Case{37, 96, 1030, "odd columns"}}) {
    auto va = rand_for(c.m * c.k, f, 80), vb = rand_for(c.k * c.n, f, 81);
    const Ref ref = reference(va, {c.m, c.k}, vb, {c.k, c.n});
    const Tensor a = make(va, Shape{c.m, c.k}, f);
    expect_matches(matmul(a, make(vb, Shape{c.k, c.n}, f)), ref, c.k, std::string(c.what) + ", row-major B");
    expect_matches(matmul(a, transposed_view(vb, c.k, c.n, f)), ref, c.k, std::string(c.what) + ", transposed B");
    std::vector<double> wide((size_t)(c.k * (c.n + 16)), 7.0);  // the padding must never be read into C
    for (int64_t r = 0; r < c.k; ++r)
      for (int64_t j = 0; j < c.n; ++j) wide[(size_t)(r * (c.n + 16) + j)] = vb[(size_t)(r * c.n + j)];
    const Tensor base = make(wide, Shape{c.k, c.n + 16}, f);
    const Tensor pitched = Tensor::view_of(base.storage(), base.offset(), Shape{c.k, c.n}, Shape{c.n + 16, 1}, f);
    expect_matches(matmul(a, pitched), ref, c.k, std::string(c.what) + ", padded pitch");
  }
  check_case(f, {3, 50, 128}, {128, 1100}, 82);  // x[batch, m, k] @ w[k, n], stacked into one product
}

TEST(MatmulTest, OneRowItemsStackedInEitherOrder) {
  // x[t, 1, k] @ w[k, n] with x's rows read from a [k, t] buffer (a recurrent layer's input
  // projection over a transposed sequence): one 2-D product with a column-major A.
  const DType f = DType::kFloat32;
  const int64_t t = 20, k = 96, n = 300;
  auto vx = rand_for(t * k, f, 90), vw = rand_for(k * n, f, 91);
  std::vector<double> buffer((size_t)(k * t));  // [k, t]
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < k; ++j) buffer[(size_t)(j * t + i)] = vx[(size_t)(i * k + j)];
  const Tensor base = make(buffer, Shape{k, t}, f);
  const Tensor x = Tensor::view_of(base.storage(), base.offset(), Shape{t, 1, k}, Shape{1, k * t, t}, f);
  expect_matches(matmul(x, make(vw, Shape{k, n}, f)), reference(vx, {t, 1, k}, vw, {k, n}), k, "column-major one-row items");
  ContextGuard guard;
  set_num_threads(2);
  expect_matches(matmul(x, make(vw, Shape{k, n}, f)), reference(vx, {t, 1, k}, vw, {k, n}), k, "the same at two threads");
}

TEST(MatmulTest, IntegerWrap) {
  // int8 sums wrap like NumPy's: 100 * 100 * 3 = 30000 -> 30000 mod 256 as int8 = 48.
  Tensor a = make({100, 100, 100}, Shape{1, 3}, DType::kInt8);
  Tensor b = make({100, 100, 100}, Shape{3, 1}, DType::kInt8);
  EXPECT_EQ(values(matmul(a, b)), std::vector<double>{(double)(int8_t)30000});
  // int64 products that overflow wrap instead of being undefined.
  Tensor c = Tensor::from_vector(std::vector<int64_t>{INT64_MAX, 2}, Shape{1, 2});
  Tensor d = Tensor::from_vector(std::vector<int64_t>{2, 1}, Shape{2, 1});
  EXPECT_EQ(matmul(c, d).data<int64_t>()[0], (int64_t)((uint64_t)INT64_MAX * 2u + 2u));
}

}  // namespace
}  // namespace spore
