// Indexing ops: gather, index_select, embedding, scatter_add, against references computed here
// with plain loops; out-of-range and negative indices must be kIndex errors (never a read out of
// bounds).
#include <gtest/gtest.h>

#include "spore/context.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::make_tensor;
using test::random_values;

Tensor random_tensor(const Shape& shape, DType t, uint32_t seed, std::vector<double>* values) {
  *values = random_values(shape.numel(), t, 0, 100, seed);
  return make_tensor(*values, shape, t);
}

// Integer indices in [0, limit) as a tensor of dtype t (int32 or int64).
Tensor random_index(const Shape& shape, int64_t limit, DType t, uint32_t seed, std::vector<int64_t>* values) {
  std::vector<double> v = random_values(shape.numel(), DType::kInt64, 0, (double)limit - 1, seed);
  values->assign(v.begin(), v.end());
  return make_tensor(v, shape, t);
}

using test::expect_error;

// ---- gather ---------------------------------------------------------------------------------
TEST(IndexGather, EveryDTypeAxisAndIndexType) {
  const int64_t X0 = 4, X1 = 5;
  for (DType t : kAllDTypes) {
    for (DType it : {DType::kInt32, DType::kInt64}) {
      for (int axis = 0; axis < 2; ++axis) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " index " + dtype_name(it) + " axis " + std::to_string(axis));
        std::vector<double> xv;
        Tensor x = random_tensor(Shape{X0, X1}, t, 1, &xv);
        // index [3, 6] along axis 1 (> X1 allowed on the gather axis), [6, 4] along axis 0.
        const int64_t I0 = axis == 0 ? 6 : 3, I1 = axis == 0 ? 4 : 6;
        std::vector<int64_t> iv;
        Tensor index = random_index(Shape{I0, I1}, axis == 0 ? X0 : X1, it, 2 + axis, &iv);
        Tensor y = gather(x, axis - 2, index);
        EXPECT_EQ(y.shape(), (Shape{I0, I1}));
        EXPECT_EQ(y.dtype(), t);
        std::vector<double> ref;
        for (int64_t i = 0; i < I0; ++i)
          for (int64_t j = 0; j < I1; ++j) {
            int64_t k = iv[(size_t)(i * I1 + j)];
            ref.push_back(axis == 0 ? xv[(size_t)(k * X1 + j)] : xv[(size_t)(i * X1 + k)]);
          }
        test::expect_close(y, ref);
      }
    }
  }
}

TEST(IndexGather, StridedInputsAndZeroDims) {
  // x is a transposed view, index an expanded (stride 0) view.
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[(size_t)i] = i;
  Tensor base = make_tensor(v, Shape{3, 4}, DType::kFloat64);
  Tensor x = transpose(base, 0, 1);  // [4, 3]: x[i][j] = v[j * 4 + i]
  Tensor index = expand(Tensor::from_vector<int64_t>({2, 0, 1}, Shape{1, 3}), {4, 3});
  Tensor y = gather(x, 1, index);
  std::vector<double> ref;
  for (int i = 0; i < 4; ++i)
    for (int64_t k : {2, 0, 1}) ref.push_back(v[(size_t)(k * 4 + i)]);
  test::expect_close(y, ref);
  // 0-d x with a 0-d index.
  Tensor s = gather(Tensor::scalar<float>(7), 0, Tensor::scalar<int64_t>(0));
  EXPECT_EQ(s.shape(), (Shape{}));
  EXPECT_EQ(s.item<float>(), 7);
  // An empty index gives an empty result.
  EXPECT_EQ(gather(x, 0, Tensor::empty(Shape{0, 3}, DType::kInt64)).shape(), (Shape{0, 3}));
}

TEST(IndexGather, LargeIsThreadCountIndependent) {
  std::vector<double> xv;
  std::vector<int64_t> iv;
  Tensor x = random_tensor(Shape{256, 300}, DType::kFloat32, 5, &xv);
  Tensor index = random_index(Shape{256, 400}, 300, DType::kInt32, 6, &iv);
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    ContextGuard guard;
    set_num_threads(threads);
    outs.push_back(gather(x, 1, index));
  }
  std::vector<double> ref;
  for (int64_t i = 0; i < 256; ++i)
    for (int64_t j = 0; j < 400; ++j) ref.push_back(xv[(size_t)(i * 300 + iv[(size_t)(i * 400 + j)])]);
  test::expect_close(outs[0], ref);
  EXPECT_EQ(max_abs_diff(outs[0], outs[1]), 0.0);
}

TEST(IndexGather, Errors) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  expect_error([&] { gather(x, 1, Tensor::from_vector<int64_t>({0, 1, 5, 0}, Shape{2, 2})); }, ErrorCode::kIndex,
               "gather", "5");
  expect_error([&] { gather(x, 1, Tensor::from_vector<int32_t>({0, -1}, Shape{1, 2})); }, ErrorCode::kIndex,
               "gather", "-1");
  // A bad index in a large index tensor (parallel scan) is still reported by its value.
  std::vector<int64_t> big(200000, 1);
  big[123457] = 3;
  expect_error([&] { gather(x, 1, Tensor::from_vector<int64_t>(big, Shape{2, 100000})); }, ErrorCode::kIndex,
               "gather", "[1, 23457]");
  expect_error([&] { gather(x, 1, Tensor::from_vector<float>({0, 1}, Shape{1, 2})); }, ErrorCode::kDType, "gather");
  expect_error([&] { gather(x, 1, Tensor::from_vector<int64_t>({0, 1}, Shape{2})); }, ErrorCode::kShape, "gather");
  expect_error([&] { gather(x, 1, Tensor::from_vector<int64_t>({0, 0, 0, 0, 0, 0}, Shape{3, 2})); },
               ErrorCode::kShape, "gather");
  expect_error([&] { gather(x, 2, Tensor::from_vector<int64_t>({0}, Shape{1, 1})); }, ErrorCode::kIndex, "gather");
}

// ---- index_select ---------------------------------------------------------------------------
TEST(IndexSelect, EveryDTypeAndAxis) {
  const std::vector<int64_t> shape = {3, 4, 5};
  for (DType t : kAllDTypes) {
    for (int axis = 0; axis < 3; ++axis) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " axis " + std::to_string(axis));
      std::vector<double> xv;
      Tensor x = random_tensor(Shape(shape), t, 7, &xv);
      std::vector<int64_t> iv;
      Tensor index = random_index(Shape{7}, shape[(size_t)axis], axis == 1 ? DType::kInt32 : DType::kInt64, 8, &iv);
      Tensor y = index_select(x, axis, index);
      std::vector<int64_t> out_shape = shape;
      out_shape[(size_t)axis] = 7;
      EXPECT_EQ(y.shape(), Shape(out_shape));
      std::vector<double> ref;
      for (int64_t a = 0; a < out_shape[0]; ++a)
        for (int64_t b = 0; b < out_shape[1]; ++b)
          for (int64_t c = 0; c < out_shape[2]; ++c) {
            int64_t src[3] = {a, b, c};
            src[axis] = iv[(size_t)src[axis]];
            ref.push_back(xv[(size_t)(src[0] * 20 + src[1] * 5 + src[2])]);
          }
      test::expect_close(y, ref);
    }
  }
}

TEST(IndexSelect, StridedInputAndErrors) {
  Tensor base = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{3, 4});
  Tensor x = slice(base, 1, 1, 4, 2);  // columns 1 and 3
  Tensor idx = slice(Tensor::from_vector<int64_t>({2, 9, 0, 9, 2}, Shape{5}), 0, 0, 5, 2);  // {2, 0, 2}
  EXPECT_EQ(index_select(x, 0, idx).to_vector<int32_t>(), (std::vector<int32_t>{9, 11, 1, 3, 9, 11}));
  EXPECT_EQ(index_select(x, 1, Tensor::from_vector<int32_t>({1, 1, 0}, Shape{3})).to_vector<int32_t>(),
            (std::vector<int32_t>{3, 3, 1, 7, 7, 5, 11, 11, 9}));
  EXPECT_EQ(index_select(x, 0, Tensor::empty(Shape{0}, DType::kInt64)).shape(), (Shape{0, 2}));
  expect_error([&] { index_select(x, 0, Tensor::from_vector<int64_t>({3}, Shape{1})); }, ErrorCode::kIndex,
               "index_select", "3");
  expect_error([&] { index_select(x, 1, Tensor::from_vector<int64_t>({-2}, Shape{1})); }, ErrorCode::kIndex,
               "index_select", "-2");
  expect_error([&] { index_select(x, 0, Tensor::from_vector<int64_t>({0, 1}, Shape{1, 2})); }, ErrorCode::kShape,
               "index_select");
  expect_error([&] { index_select(x, 0, Tensor::from_vector<double>({0}, Shape{1})); }, ErrorCode::kDType,
               "index_select");
  expect_error([&] { index_select(x, -3, Tensor::from_vector<int64_t>({0}, Shape{1})); }, ErrorCode::kIndex,
               "index_select");
}

// ---- embedding ------------------------------------------------------------------------------
TEST(IndexEmbedding, EveryDTypeAndIdsShape) {
  const int64_t V = 6, D = 5;
  for (DType t : kAllDTypes) {
    for (DType it : {DType::kInt32, DType::kInt64}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " ids " + dtype_name(it));
      std::vector<double> tv;
      Tensor table = random_tensor(Shape{V, D}, t, 9, &tv);
      std::vector<int64_t> iv;
      Tensor ids = random_index(Shape{2, 3}, V, it, 10, &iv);
      Tensor y = embedding(ids, table);
      EXPECT_EQ(y.shape(), (Shape{2, 3, D}));
      EXPECT_EQ(y.dtype(), t);
      std::vector<double> ref;
      for (int64_t id : iv)
        for (int64_t d = 0; d < D; ++d) ref.push_back(tv[(size_t)(id * D + d)]);
      test::expect_close(y, ref);
    }
  }
  Tensor table = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(embedding(Tensor::scalar<int64_t>(1), table).to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(IndexEmbedding, StridedTableLargeAndErrors) {
  // A transposed table: row r of table = column r of the base.
  std::vector<double> bv;
  Tensor base = random_tensor(Shape{64, 1000}, DType::kFloat32, 11, &bv);
  Tensor table = transpose(base, 0, 1);  // [1000, 64]
  std::vector<int64_t> iv;
  Tensor ids = random_index(Shape{8, 300}, 1000, DType::kInt64, 12, &iv);
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    ContextGuard guard;
    set_num_threads(threads);
    outs.push_back(embedding(ids, table));
  }
  std::vector<double> ref;
  for (int64_t id : iv)
    for (int64_t d = 0; d < 64; ++d) ref.push_back(bv[(size_t)(d * 1000 + id)]);
  test::expect_close(outs[0], ref);
  EXPECT_EQ(max_abs_diff(outs[0], outs[1]), 0.0);

  Tensor small = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  expect_error([&] { embedding(Tensor::from_vector<int64_t>({0, 2}, Shape{2}), small); }, ErrorCode::kIndex,
               "embedding", "2");
  expect_error([&] { embedding(Tensor::from_vector<int32_t>({-1}, Shape{1}), small); }, ErrorCode::kIndex,
               "embedding", "-1");
  expect_error([&] { embedding(Tensor::from_vector<float>({0}, Shape{1}), small); }, ErrorCode::kDType, "embedding");
  expect_error([&] { embedding(Tensor::from_vector<int64_t>({0}, Shape{1}), Tensor::from_vector<float>({1}, Shape{1})); },
               ErrorCode::kShape, "embedding");
}

// ---- scatter_add ----------------------------------------------------------------------------
// Small integers: every sum below is exact in every dtype (int8 and bfloat16 included), so any
// difference is the kernel's.
Tensor small_ints(const Shape& shape, DType t, uint32_t seed, std::vector<double>* values) {
  *values = random_values(shape.numel(), DType::kInt64, 0, 7, seed);
  return make_tensor(*values, shape, t);
}

TEST(IndexScatterAdd, EveryDTypeAxisAndIndexType) {
  const int64_t X0 = 4, X1 = 5;
  for (DType t : kAllDTypes) {
    if (t == DType::kBool) continue;  // sums are not bools: see BoolIsALogicalOr
    for (DType it : {DType::kInt32, DType::kInt64}) {
      for (int axis = 0; axis < 2; ++axis) {
        SCOPED_TRACE(std::string(dtype_name(t)) + " index " + dtype_name(it) + " axis " + std::to_string(axis));
        std::vector<double> xv, sv;
        Tensor x = small_ints(Shape{X0, X1}, t, 21, &xv);
        // index [6, 3] along axis 0 (more rows than x: indices repeat), [3, 6] along axis 1;
        // src is larger than index in both dimensions (only its leading block is read).
        const int64_t I0 = axis == 0 ? 6 : 3, I1 = axis == 0 ? 3 : 6;
        const int64_t S1 = I1 + 1;
        Tensor src = small_ints(Shape{I0 + 1, S1}, t, 22, &sv);
        std::vector<int64_t> iv;
        Tensor index = random_index(Shape{I0, I1}, axis == 0 ? X0 : X1, it, 23 + axis, &iv);
        Tensor y = scatter_add(x, axis - 2, index, src);
        EXPECT_EQ(y.shape(), (Shape{X0, X1}));
        EXPECT_EQ(y.dtype(), t);
        std::vector<double> ref = xv;
        for (int64_t i = 0; i < I0; ++i)
          for (int64_t j = 0; j < I1; ++j) {
            const int64_t k = iv[(size_t)(i * I1 + j)];
            const int64_t at = axis == 0 ? k * X1 + j : i * X1 + k;
            ref[(size_t)at] += sv[(size_t)(i * S1 + j)];
          }
        test::expect_close(y, ref);
        test::expect_close(x, xv, "x is not modified");
      }
    }
  }
}

TEST(IndexScatterAdd, BoolIsALogicalOr) {
  // x = [0, 1, 0, 0]; true is added twice at 0 (stays true), false at 1 and true at 3.
  auto bools = [](std::vector<uint8_t> v) { return cast(Tensor::from_vector<uint8_t>(v, Shape{4}), DType::kBool); };
  Tensor y = scatter_add(bools({0, 1, 0, 0}), 0, Tensor::from_vector<int64_t>({0, 1, 3, 0}, Shape{4}),
                         bools({1, 0, 1, 1}));
  EXPECT_EQ(y.dtype(), DType::kBool);
  EXPECT_EQ(y.to_vector<double>(), (std::vector<double>{1, 1, 0, 1}));
}

TEST(IndexScatterAdd, ThreeDimsEveryAxis) {
  const std::vector<int64_t> xs = {3, 4, 2};
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    std::vector<double> xv, sv;
    Tensor x = small_ints(Shape(xs), DType::kFloat64, 31, &xv);
    std::vector<int64_t> is = xs;
    is[(size_t)axis] = 5;
    Tensor src = small_ints(Shape(is), DType::kFloat64, 32, &sv);
    std::vector<int64_t> iv;
    Tensor index = random_index(Shape(is), xs[(size_t)axis], DType::kInt64, 33, &iv);
    Tensor y = scatter_add(x, axis, index, src);
    std::vector<double> ref = xv;
    for (int64_t a = 0; a < is[0]; ++a)
      for (int64_t b = 0; b < is[1]; ++b)
        for (int64_t c = 0; c < is[2]; ++c) {
          const size_t p = (size_t)((a * is[1] + b) * is[2] + c);
          int64_t dst[3] = {a, b, c};
          dst[axis] = iv[p];
          ref[(size_t)((dst[0] * xs[1] + dst[1]) * xs[2] + dst[2])] += sv[p];
        }
    test::expect_close(y, ref);
  }
}

TEST(IndexScatterAdd, StridedInputsZeroDimsAndEmpty) {
  // x a transposed view, index an expanded (stride 0) view, src a strided slice.
  std::vector<double> v(12);
  for (int i = 0; i < 12; ++i) v[(size_t)i] = i;
  Tensor x = transpose(make_tensor(v, Shape{3, 4}, DType::kFloat32), 0, 1);  // [4, 3]: x[i][j] = v[j*4+i]
  Tensor index = expand(Tensor::from_vector<int64_t>({2, 0, 2}, Shape{1, 3}), {4, 3});
  Tensor src_base = Tensor::from_vector<float>({1, 100, 2, 100, 3, 100, 4, 100, 5, 100, 6, 100, 7, 100, 8, 100, 9,
                                                100, 10, 100, 11, 100, 12, 100},
                                               Shape{4, 6});
  Tensor src = slice(src_base, 1, 0, 6, 2);  // [4, 3]: 1..12 row-major
  Tensor y = scatter_add(x, 1, index, src);  // row i: y[i][idx[j]] += src[i][j]
  std::vector<double> ref;
  for (int i = 0; i < 4; ++i) {
    double row[3] = {v[(size_t)i], v[(size_t)(4 + i)], v[(size_t)(8 + i)]};
    row[2] += 1 + 3 * i;  // src[i][0] into column 2
    row[0] += 2 + 3 * i;  // src[i][1] into column 0
    row[2] += 3 + 3 * i;  // src[i][2] into column 2 again
    ref.insert(ref.end(), row, row + 3);
  }
  test::expect_close(y, ref);
  // 0-d: one element along the axis.
  Tensor s = scatter_add(Tensor::scalar<double>(1.5), 0, Tensor::scalar<int32_t>(0), Tensor::scalar<double>(2));
  EXPECT_EQ(s.shape(), (Shape{}));
  EXPECT_EQ(s.item<double>(), 3.5);
  // An empty index leaves x unchanged (as a new tensor).
  Tensor e = scatter_add(x, 0, Tensor::empty(Shape{0, 3}, DType::kInt64), Tensor::empty(Shape{0, 3}, DType::kFloat32));
  test::expect_close(e, x.contiguous().to_vector<double>());
  EXPECT_FALSE(e.same_storage(x));
}

// Repeated indices add in index order whatever the thread count (NOTE [Deterministic
// scatter_add]): the reference is that same order of float32 additions, so results must match
// it exactly, not just closely.
TEST(IndexScatterAdd, RepeatedIndicesAreDeterministic) {
  for (int axis = 0; axis < 2; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    const int64_t X0 = axis == 0 ? 16 : 300, X1 = axis == 0 ? 300 : 16;
    const int64_t I0 = axis == 0 ? 400 : 300, I1 = axis == 0 ? 300 : 400;
    std::vector<double> xv = random_values(X0 * X1, DType::kFloat32, -1, 1, 41);
    std::vector<double> sv = random_values(I0 * I1, DType::kFloat32, -1, 1, 42);
    std::vector<int64_t> iv;
    Tensor index = random_index(Shape{I0, I1}, axis == 0 ? X0 : X1, DType::kInt64, 43, &iv);
    Tensor x = make_tensor(xv, Shape{X0, X1}, DType::kFloat32);
    Tensor src = make_tensor(sv, Shape{I0, I1}, DType::kFloat32);
    std::vector<float> ref(xv.begin(), xv.end());
    for (int64_t i = 0; i < I0; ++i)  // row-major = index order along either axis
      for (int64_t j = 0; j < I1; ++j) {
        const int64_t k = iv[(size_t)(i * I1 + j)];
        ref[(size_t)(axis == 0 ? k * X1 + j : i * X1 + k)] += (float)sv[(size_t)(i * I1 + j)];
      }
    for (int threads : {1, 2, 4}) {
      ContextGuard guard;
      set_num_threads(threads);
      EXPECT_EQ(scatter_add(x, axis, index, src).to_vector<float>(), ref) << threads << " threads";
    }
  }
}

TEST(IndexScatterAdd, Errors) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor src = Tensor::from_vector<float>({1, 1, 1, 1, 1, 1}, Shape{2, 3});
  auto idx = [](std::vector<int64_t> v, Shape s) { return Tensor::from_vector<int64_t>(v, s); };
  expect_error([&] { scatter_add(x, 1, idx({0, 3}, Shape{1, 2}), src); }, ErrorCode::kIndex, "scatter_add", "3");
  expect_error([&] { scatter_add(x, 0, Tensor::from_vector<int32_t>({0, -1}, Shape{1, 2}), src); },
               ErrorCode::kIndex, "scatter_add", "-1");
  expect_error([&] { scatter_add(x, 0, Tensor::from_vector<float>({0}, Shape{1, 1}), src); }, ErrorCode::kDType,
               "scatter_add");
  expect_error([&] { scatter_add(x, 0, idx({0}, Shape{1, 1}), cast(src, DType::kFloat64)); }, ErrorCode::kDType,
               "scatter_add", "float64");
  expect_error([&] { scatter_add(x, 0, idx({0, 1}, Shape{2}), src); }, ErrorCode::kShape, "scatter_add", "rank");
  // index larger than src (along the axis too), and larger than x off the axis.
  expect_error([&] { scatter_add(x, 0, idx({0, 0, 0}, Shape{3, 1}), src); }, ErrorCode::kShape, "scatter_add",
               "[2, 3]");
  expect_error([&] { scatter_add(x, 0, idx({0, 0, 0, 0}, Shape{1, 4}), Tensor::empty(Shape{1, 4}, DType::kFloat32)); },
               ErrorCode::kShape, "scatter_add", "[1, 4]");
  expect_error([&] { scatter_add(x, 2, idx({0}, Shape{1, 1}), src); }, ErrorCode::kIndex, "scatter_add");
}

}  // namespace
}  // namespace spore
