// Shape ops: reshape, permute, slice, expand (views), concat and slice_scatter, plus the API composites
// (transpose, flatten, squeeze, unsqueeze, stack, split, chunk). References are plain index
// arithmetic over the input values, written here.
#include <gtest/gtest.h>

#include <limits>
#include <numeric>

#include "spore/context.h"
#include "spore/ops.h"
#include "test_util.h"

namespace spore {
namespace {

using test::make_tensor;
using test::random_values;

// Values in [0, 100] are exact in every dtype (uint8 included).
Tensor random_tensor(const Shape& shape, DType t, uint32_t seed, std::vector<double>* values = nullptr) {
  std::vector<double> v = random_values(shape.numel(), t, 0, 100, seed);
  if (values) *values = v;
  return make_tensor(v, shape, t);
}

// Row-major values of the view (offset, shape, strides) over a flat buffer.
std::vector<double> view_values(const std::vector<double>& base, int64_t offset, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& strides) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, at = offset;
    for (int d = (int)shape.size() - 1; d >= 0; --d) {
      at += (rem % shape[d]) * strides[d];
      rem /= shape[d];
    }
    out.push_back(base[(size_t)at]);
  }
  return out;
}

using test::expect_error;

// ---- reshape --------------------------------------------------------------------------------
TEST(ShapeReshape, ContiguousIsAViewForEveryDType) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v;
    Tensor x = random_tensor(Shape{2, 3, 4}, t, 1, &v);
    Tensor y = reshape(x, {4, -1});
    EXPECT_EQ(y.shape(), (Shape{4, 6}));
    EXPECT_EQ(y.dtype(), t);
    EXPECT_TRUE(y.same_storage(x));
    EXPECT_TRUE(y.is_contiguous());
    test::expect_close(y, v);
    EXPECT_EQ(reshape(x, {24}).shape(), (Shape{24}));
    EXPECT_EQ(reshape(x, {-1}).shape(), (Shape{24}));
    EXPECT_EQ(reshape(x, {1, 2, 1, 12, 1}).shape(), (Shape{1, 2, 1, 12, 1}));
  }
  Tensor s = Tensor::scalar<float>(5);
  EXPECT_EQ(reshape(s, {1, 1}).shape(), (Shape{1, 1}));
  EXPECT_EQ(reshape(reshape(s, {1}), {}).shape(), (Shape{}));
  Tensor empty = Tensor::empty(Shape{0, 3}, DType::kFloat32);
  EXPECT_EQ(reshape(empty, {3, 0, 5}).shape(), (Shape{3, 0, 5}));
  EXPECT_EQ(reshape(empty, {-1, 6}).shape(), (Shape{0, 6}));
}

TEST(ShapeReshape, WritesThroughTheViewAreSeenByTheInput) {
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Tensor y = reshape(x, {3, 2});
  y.data<float>()[5] = 50;  // y is contiguous over the same memory
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 50}));
}

TEST(ShapeReshape, StridedInputsAreViewsWhenTheStridesAllow) {
  std::vector<double> v(24);
  std::iota(v.begin(), v.end(), 0);
  Tensor base = make_tensor(v, Shape{4, 6}, DType::kFloat32);
  // Columns 1..4 of every row: rows are contiguous runs of 4, rows 6 apart.
  Tensor cols = Tensor::view_of(base.storage(), 1, Shape{4, 4}, Shape{6, 1}, DType::kFloat32);
  Tensor split_last = reshape(cols, {4, 2, 2});
  EXPECT_TRUE(split_last.same_storage(base));
  EXPECT_EQ(split_last.strides(), (Shape{6, 2, 1}));
  test::expect_close(split_last, view_values(v, 1, {4, 4}, {6, 1}));
  Tensor split_first = reshape(cols, {2, 2, 4, 1});
  EXPECT_TRUE(split_first.same_storage(base));
  test::expect_close(split_first, view_values(v, 1, {4, 4}, {6, 1}));
  // Merging rows that are not adjacent in memory must copy, and still give the right values.
  Tensor flat = reshape(cols, {16});
  EXPECT_FALSE(flat.same_storage(base));
  EXPECT_TRUE(flat.is_contiguous());
  test::expect_close(flat, view_values(v, 1, {4, 4}, {6, 1}));

  // A transposed matrix: adding unit dims is a view, flattening copies in transposed order.
  Tensor tr = Tensor::view_of(base.storage(), 0, Shape{6, 4}, Shape{1, 6}, DType::kFloat32);
  Tensor unit = reshape(tr, {6, 1, 4, 1});
  EXPECT_TRUE(unit.same_storage(base));
  test::expect_close(unit, view_values(v, 0, {6, 4}, {1, 6}));
  Tensor tr_flat = reshape(tr, {2, 12});
  EXPECT_FALSE(tr_flat.same_storage(base));
  test::expect_close(tr_flat, view_values(v, 0, {6, 4}, {1, 6}));
  // Splitting the outer (stride-1) dim of the transposed matrix stays a view.
  Tensor tr_split = reshape(tr, {3, 2, 4});
  EXPECT_TRUE(tr_split.same_storage(base));
  EXPECT_EQ(tr_split.strides(), (Shape{2, 1, 6}));
  test::expect_close(tr_split, view_values(v, 0, {6, 4}, {1, 6}));

  // An expanded tensor keeps its zero strides where possible.
  Tensor row = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{1, 4});
  Tensor ex = expand(row, {3, 4});
  Tensor ex_split = reshape(ex, {3, 2, 2});
  EXPECT_TRUE(ex_split.same_storage(row));
  EXPECT_EQ(ex_split.strides(), (Shape{0, 2, 1}));
  Tensor ex_flat = reshape(ex, {12});
  EXPECT_FALSE(ex_flat.same_storage(row));
  test::expect_close(ex_flat, {1, 2, 3, 4, 1, 2, 3, 4, 1, 2, 3, 4});
}

TEST(ShapeReshape, BadShapesAreErrors) {
  Tensor x = Tensor::from_vector<float>(std::vector<float>(12, 1.f), Shape{3, 4});
  expect_error([&] { reshape(x, {-1, -1}); }, ErrorCode::kValue, "reshape");
  expect_error([&] { reshape(x, {5, 3}); }, ErrorCode::kShape, "reshape");
  expect_error([&] { reshape(x, {5, -1}); }, ErrorCode::kShape, "reshape");
  expect_error([&] { reshape(x, {-3, 4}); }, ErrorCode::kValue, "reshape");
  expect_error([&] { reshape(x, {0, -1}); }, ErrorCode::kShape, "reshape");
  expect_error([&] { reshape(x, {1, 1, 1, 1, 1, 1, 1, 1, 12}); }, ErrorCode::kShape, "reshape");
  expect_error([&] { reshape(x, {int64_t{1} << 40, int64_t{1} << 40, 0}); }, ErrorCode::kShape, "reshape");
  expect_error([&] { reshape(x, {std::numeric_limits<int64_t>::max(), 2}); }, ErrorCode::kShape, "reshape");
}

// ---- permute / transpose --------------------------------------------------------------------
TEST(ShapePermute, ValuesForEveryDTypeAndSharedStorage) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v;
    Tensor x = random_tensor(Shape{2, 3, 4}, t, 2, &v);
    Tensor y = permute(x, {2, 0, -2});
    EXPECT_EQ(y.shape(), (Shape{4, 2, 3}));
    EXPECT_TRUE(y.same_storage(x));
    std::vector<double> ref;
    for (int k = 0; k < 4; ++k)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j) ref.push_back(v[(size_t)(i * 12 + j * 4 + k)]);
    test::expect_close(y, ref);
    test::expect_close(y.contiguous(), ref);
  }
}

TEST(ShapePermute, TransposeAndErrors) {
  Tensor x = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Tensor t = transpose(x, 0, -1);
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  EXPECT_EQ(t.strides(), (Shape{1, 3}));
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(transpose(Tensor::scalar<float>(1), 0, 0).shape(), (Shape{}));
  expect_error([&] { permute(x, {0, 0}); }, ErrorCode::kValue, "permute");
  expect_error([&] { permute(x, {0}); }, ErrorCode::kShape, "permute");
  expect_error([&] { permute(x, {0, 2}); }, ErrorCode::kIndex, "permute");
  expect_error([&] { transpose(x, 0, 2); }, ErrorCode::kIndex, "transpose");
}

// ---- slice ----------------------------------------------------------------------------------
TEST(ShapeSlice, PythonSemanticsWithClampingAndSteps) {
  std::vector<int64_t> v(10);
  std::iota(v.begin(), v.end(), 0);
  Tensor x = Tensor::from_vector<int64_t>(v, Shape{10});
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  struct Case {
    int64_t start, end, step;
    std::vector<int64_t> want;  // what Python's list(range(10))[start:end:step] gives
  };
  const Case cases[] = {
      {2, 8, 3, {2, 5}},      {-3, 100, 1, {7, 8, 9}}, {-100, 3, 2, {0, 2}}, {5, 2, 1, {}},
      {0, 10, 20, {0}},       {kMin, kMax, 4, {0, 4, 8}}, {-1, -1000, 1, {}}, {1, -1, 3, {1, 4, 7}},
      {10, 12, 1, {}},        {9, 10, 1, {9}},          {0, 0, 1, {}},        {-10, -9, 5, {0}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.start) + ":" + std::to_string(c.end) + ":" + std::to_string(c.step));
    Tensor s = slice(x, 0, c.start, c.end, c.step);
    EXPECT_EQ(s.shape(), (Shape{(int64_t)c.want.size()}));
    EXPECT_EQ(s.to_vector<int64_t>(), c.want);
    EXPECT_TRUE(s.same_storage(x));
  }
  // A huge step on a strided axis takes one element (no stride overflow).
  Tensor m = Tensor::from_vector<int64_t>(v, Shape{2, 5});
  EXPECT_EQ(slice(m, 0, 1, kMax, kMax).to_vector<int64_t>(), (std::vector<int64_t>{5, 6, 7, 8, 9}));
}

TEST(ShapeSlice, StridedSlicesOfEveryDTypeShareStorage) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v;
    Tensor x = random_tensor(Shape{3, 7}, t, 3, &v);
    Tensor s = slice(x, -1, 1, 7, 2);  // columns 1, 3, 5
    EXPECT_EQ(s.shape(), (Shape{3, 3}));
    EXPECT_TRUE(s.same_storage(x));
    test::expect_close(s, view_values(v, 1, {3, 3}, {7, 2}));
    Tensor rows = slice(s, 0, 1, 3);  // a slice of a slice
    test::expect_close(rows, view_values(v, 8, {2, 3}, {7, 2}));
  }
  // Writing into a slice changes the input.
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, Shape{6});
  slice(x, 0, 1, 6, 2).copy_(Tensor::from_vector<float>({10, 30, 50}, Shape{3}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 10, 2, 30, 4, 50}));
}

TEST(ShapeSlice, Errors) {
  Tensor x = Tensor::from_vector<float>({0, 1, 2}, Shape{3});
  expect_error([&] { slice(x, 0, 0, 3, 0); }, ErrorCode::kValue, "slice");
  expect_error([&] { slice(x, 0, 3, 0, -1); }, ErrorCode::kValue, "slice");
  expect_error([&] { slice(x, 1, 0, 3); }, ErrorCode::kIndex, "slice");
  expect_error([&] { slice(Tensor::scalar<float>(1), 0, 0, 1); }, ErrorCode::kShape, "slice");
}

// ---- expand ---------------------------------------------------------------------------------
TEST(ShapeExpand, BroadcastViewsHaveZeroStrides) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    std::vector<double> v;
    Tensor x = random_tensor(Shape{3, 1}, t, 4, &v);
    Tensor y = expand(x, {2, 3, 4});
    EXPECT_EQ(y.shape(), (Shape{2, 3, 4}));
    EXPECT_EQ(y.strides(), (Shape{0, 1, 0}));
    EXPECT_TRUE(y.same_storage(x));
    std::vector<double> ref;
    for (int a = 0; a < 2; ++a)
      for (int i = 0; i < 3; ++i)
        for (int k = 0; k < 4; ++k) ref.push_back(v[(size_t)i]);
    test::expect_close(y, ref);
  }
  Tensor x = Tensor::from_vector<float>({1, 2}, Shape{2, 1});
  EXPECT_EQ(expand(x, {-1, 5}).shape(), (Shape{2, 5}));
  EXPECT_EQ(expand(x, {2, 0}).shape(), (Shape{2, 0}));
  EXPECT_EQ(expand(Tensor::scalar<float>(3), {2, 2}).to_vector<float>(), (std::vector<float>{3, 3, 3, 3}));
  expect_error([&] { expand(x, {3, 5}); }, ErrorCode::kShape, "expand");
  expect_error([&] { expand(x, {5}); }, ErrorCode::kShape, "expand");
  expect_error([&] { expand(x, {-1, 2, 5}); }, ErrorCode::kValue, "expand");
  expect_error([&] { expand(x, {2, -2}); }, ErrorCode::kValue, "expand");
}

// ---- concat ---------------------------------------------------------------------------------
std::vector<double> concat_ref(const std::vector<std::vector<double>>& parts,
                               const std::vector<std::vector<int64_t>>& shapes, int axis) {
  // outer = product of dims before axis; each part contributes rows of its (axis..end) block.
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= shapes[0][(size_t)d];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t k = 0; k < parts.size(); ++k) {
      int64_t block = (int64_t)parts[k].size() / std::max<int64_t>(outer, 1);
      for (int64_t j = 0; j < block; ++j) out.push_back(parts[k][(size_t)(o * block + j)]);
    }
  return out;
}

TEST(ShapeConcat, EveryDTypeAndAxis) {
  for (DType t : kAllDTypes) {
    SCOPED_TRACE(dtype_name(t));
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<std::vector<int64_t>> shapes = {{2, 3, 4}, {2, 3, 4}, {2, 3, 4}};
      shapes[1][(size_t)axis] = 1;
      shapes[2][(size_t)axis] = 5;
      std::vector<std::vector<double>> vals(3);
      std::vector<Tensor> xs;
      for (int k = 0; k < 3; ++k) xs.push_back(random_tensor(Shape(shapes[(size_t)k]), t, 10 + k, &vals[(size_t)k]));
      Tensor y = concat(xs, axis - 3);
      std::vector<int64_t> want = shapes[0];
      want[(size_t)axis] = shapes[0][(size_t)axis] + 1 + 5;
      EXPECT_EQ(y.shape(), Shape(want));
      EXPECT_EQ(y.dtype(), t);
      test::expect_close(y, concat_ref(vals, shapes, axis), "axis " + std::to_string(axis));
    }
  }
}

TEST(ShapeConcat, StridedInputsAndMixedDTypes) {
  std::vector<double> v(12);
  std::iota(v.begin(), v.end(), 0);
  Tensor base = make_tensor(v, Shape{3, 4}, DType::kFloat32);
  Tensor tr = transpose(base, 0, 1);                          // [4, 3], strides [1, 4]
  Tensor ex = expand(Tensor::from_vector<float>({7, 8, 9}, Shape{1, 3}), {2, 3});  // zero strides
  Tensor y = concat({tr, ex}, 0);
  EXPECT_EQ(y.shape(), (Shape{6, 3}));
  std::vector<double> ref = view_values(v, 0, {4, 3}, {1, 4});
  for (int r = 0; r < 2; ++r) ref.insert(ref.end(), {7, 8, 9});
  test::expect_close(y, ref);

  // int32 + float16 -> float16; int8 + uint8 -> int32; bool + float64 -> float64.
  Tensor i32 = Tensor::from_vector<int32_t>({1, -2}, Shape{2});
  Tensor f16 = make_tensor({0.5, 1.5}, Shape{2}, DType::kFloat16);
  Tensor a = concat({i32, f16});
  EXPECT_EQ(a.dtype(), DType::kFloat16);
  test::expect_close(a, {1, -2, 0.5, 1.5});
  Tensor b = concat({Tensor::from_vector<int8_t>({-3}, Shape{1}), Tensor::from_vector<uint8_t>({200}, Shape{1})});
  EXPECT_EQ(b.dtype(), DType::kInt32);
  EXPECT_EQ(b.to_vector<int32_t>(), (std::vector<int32_t>{-3, 200}));
  Tensor c = concat({make_tensor({1, 0}, Shape{2}, DType::kBool), Tensor::from_vector<double>({2.25}, Shape{1})});
  EXPECT_EQ(c.dtype(), DType::kFloat64);
  test::expect_close(c, {1, 0, 2.25});
  // Empty pieces are fine.
  Tensor d = concat({Tensor::empty(Shape{0, 2}, DType::kFloat32), Tensor::from_vector<float>({1, 2}, Shape{1, 2})});
  EXPECT_EQ(d.shape(), (Shape{1, 2}));
  test::expect_close(d, {1, 2});
}

TEST(ShapeConcat, LargeAndManyInputs) {
  // Large enough to split across threads; identical for 1 and 2 threads.
  std::vector<double> va, vb;
  Tensor a = random_tensor(Shape{300, 257}, DType::kFloat32, 20, &va);
  Tensor b = random_tensor(Shape{300, 129}, DType::kFloat32, 21, &vb);
  std::vector<Tensor> outs;
  for (int threads : {1, 2}) {
    ContextGuard guard;
    set_num_threads(threads);
    outs.push_back(concat({a, slice(b, 1, 0, 129)}, 1));
  }
  test::expect_close(outs[0], concat_ref({va, vb}, {{300, 257}, {300, 129}}, 1));
  EXPECT_EQ(max_abs_diff(outs[0], outs[1]), 0.0);
  // More inputs than the dispatcher's 32-bit promotion mask (grouped by the API).
  std::vector<Tensor> many;
  std::vector<double> ref;
  for (int k = 0; k < 70; ++k) {
    many.push_back(k % 2 ? Tensor::from_vector<int32_t>({k}, Shape{1}) : Tensor::from_vector<float>({k + 0.5f}, Shape{1}));
    ref.push_back(k % 2 ? k : k + 0.5);
  }
  Tensor m = concat(many);
  EXPECT_EQ(m.dtype(), DType::kFloat32);
  test::expect_close(m, ref);
}

TEST(ShapeConcat, Errors) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor b = Tensor::from_vector<float>({1, 2, 3}, Shape{1, 3});
  expect_error([&] { concat({a, b}, 0); }, ErrorCode::kShape, "concat");
  expect_error([&] { concat({a, Tensor::from_vector<float>({1, 2}, Shape{2})}, 0); }, ErrorCode::kShape, "concat");
  expect_error([&] { concat({a, a}, 2); }, ErrorCode::kIndex, "concat");
  expect_error([&] { concat({Tensor::scalar<float>(1), Tensor::scalar<float>(2)}); }, ErrorCode::kShape, "concat");
  expect_error([&] { concat({}); }, ErrorCode::kValue, "concat");
}

// ---- composites -----------------------------------------------------------------------------
TEST(ShapeComposites, FlattenSqueezeUnsqueeze) {
  Tensor x = Tensor::from_vector<float>(std::vector<float>(24, 1.f), Shape{2, 1, 3, 4});
  EXPECT_EQ(flatten(x).shape(), (Shape{24}));
  EXPECT_EQ(flatten(x, 1).shape(), (Shape{2, 12}));
  EXPECT_EQ(flatten(x, 1, 2).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(flatten(Tensor::scalar<float>(1)).shape(), (Shape{1}));
  expect_error([&] { flatten(x, 2, 1); }, ErrorCode::kValue, "flatten");
  EXPECT_EQ(squeeze(x).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(squeeze(x, 1).shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(squeeze(x, -3).shape(), (Shape{2, 3, 4}));
  expect_error([&] { squeeze(x, 0); }, ErrorCode::kShape, "squeeze");
  EXPECT_EQ(unsqueeze(x, 0).shape(), (Shape{1, 2, 1, 3, 4}));
  EXPECT_EQ(unsqueeze(x, -1).shape(), (Shape{2, 1, 3, 4, 1}));
  expect_error([&] { unsqueeze(x, 5); }, ErrorCode::kIndex, "unsqueeze");
  EXPECT_TRUE(squeeze(x).same_storage(x));
  // unsqueeze of a non-contiguous tensor stays a view.
  Tensor t = transpose(Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}), 0, 1);
  Tensor u = unsqueeze(t, 1);
  EXPECT_TRUE(u.same_storage(t));
  EXPECT_EQ(u.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(ShapeComposites, StackSplitChunk) {
  Tensor a = Tensor::from_vector<float>({1, 2, 3}, Shape{3});
  Tensor b = Tensor::from_vector<int64_t>({4, 5, 6}, Shape{3});
  Tensor s0 = stack({a, b});
  EXPECT_EQ(s0.shape(), (Shape{2, 3}));
  EXPECT_EQ(s0.dtype(), DType::kFloat32);
  EXPECT_EQ(s0.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  Tensor s1 = stack({a, b}, -1);
  EXPECT_EQ(s1.shape(), (Shape{3, 2}));
  EXPECT_EQ(s1.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  expect_error([&] { stack({a, Tensor::from_vector<float>({1}, Shape{1})}); }, ErrorCode::kShape, "stack");
  expect_error([&] { stack({}); }, ErrorCode::kValue, "stack");

  Tensor x = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Shape{2, 6});
  std::vector<Tensor> parts = split(x, {1, 0, 5}, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].to_vector<int32_t>(), (std::vector<int32_t>{0, 6}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(parts[2].to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 5, 7, 8, 9, 10, 11}));
  for (const Tensor& p : parts) EXPECT_TRUE(p.same_storage(x));
  expect_error([&] { split(x, {2, 2}, 1); }, ErrorCode::kShape, "split");
  expect_error([&] { split(x, {7, -1}, 1); }, ErrorCode::kValue, "split");
  std::vector<Tensor> ch = chunk(x, 3, -1);
  ASSERT_EQ(ch.size(), 3u);
  EXPECT_EQ(ch[2].to_vector<int32_t>(), (std::vector<int32_t>{4, 5, 10, 11}));
  expect_error([&] { chunk(x, 4, 1); }, ErrorCode::kShape, "chunk");
  expect_error([&] { chunk(x, 0, 1); }, ErrorCode::kValue, "chunk");
}

// ---- slice_scatter --------------------------------------------------------------------------
// Reference: element c of the output comes from src when c's coordinate along the axis is
// start + k * step for some k < length (the slice, resolved by hand in each case), else from x.
std::vector<double> slice_scatter_ref(const std::vector<double>& xv, const std::vector<double>& sv,
                                      const std::vector<int64_t>& shape, int axis, int64_t start, int64_t length,
                                      int64_t step) {
  std::vector<int64_t> ss = shape;
  ss[(size_t)axis] = length;
  const std::vector<int64_t> xst = test::strides_of(shape), sst = test::strides_of(ss);
  std::vector<double> out = xv;
  for (size_t i = 0; i < xv.size(); ++i) {
    int64_t c = ((int64_t)i / xst[(size_t)axis]) % shape[(size_t)axis];
    if (c < start || (c - start) % step != 0 || (c - start) / step >= length) continue;
    int64_t rem = (int64_t)i, at = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t cd = rem / xst[d];
      rem %= xst[d];
      at += (d == (size_t)axis ? (c - start) / step : cd) * sst[d];
    }
    out[i] = sv[(size_t)at];
  }
  return out;
}

TEST(ShapeSliceScatter, EveryDTypeAndAxis) {
  const std::vector<int64_t> shape = {3, 5, 4};
  struct Case {
    int axis;
    int64_t start, end, step;
    int64_t r_start, r_length;  // Python's resolution of start:end:step for that extent
  };
  const Case cases[] = {{0, -2, 100, 1, 1, 2}, {1, 1, 5, 2, 1, 2}, {2, 0, 4, 3, 0, 2}, {-2, -100, -1, 3, 0, 2},
                        {1, 4, 2, 1, 4, 0}};
  for (DType t : kAllDTypes) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " axis " + std::to_string(c.axis) + " " + std::to_string(c.start) +
                   ":" + std::to_string(c.end) + ":" + std::to_string(c.step));
      const int axis = c.axis < 0 ? c.axis + 3 : c.axis;
      std::vector<int64_t> ss = shape;
      ss[(size_t)axis] = c.r_length;
      std::vector<double> xv, sv;
      Tensor x = random_tensor(Shape(shape), t, 51, &xv);
      Tensor src = random_tensor(Shape(ss), t, 52, &sv);
      Tensor y = slice_scatter(x, src, c.axis, c.start, c.end, c.step);
      EXPECT_EQ(y.shape(), Shape(shape));
      EXPECT_EQ(y.dtype(), t);
      EXPECT_FALSE(y.same_storage(x));
      test::expect_close(y, slice_scatter_ref(xv, sv, shape, axis, c.r_start, c.r_length, c.step));
      test::expect_close(x, xv, "x is not modified");
      // slice() of the result views exactly src.
      test::expect_close(slice(y, c.axis, c.start, c.end, c.step), sv, "slice of the result");
    }
  }
}

TEST(ShapeSliceScatter, StridedInputsLargeAndHugeStep) {
  // x a transposed view, src an expanded (stride 0) view.
  std::vector<double> bv;
  Tensor base = random_tensor(Shape{4, 3}, DType::kFloat64, 53, &bv);
  Tensor x = transpose(base, 0, 1);  // [3, 4]: x[i][j] = bv[j * 3 + i]
  std::vector<double> xv = view_values(bv, 0, {3, 4}, {1, 3});
  Tensor src = expand(Tensor::from_vector<double>({-1, -2, -3}, Shape{3, 1}), {3, 2});
  Tensor y = slice_scatter(x, src, 1, 1, 4, 2);  // columns 1 and 3
  test::expect_close(y, slice_scatter_ref(xv, {-1, -1, -2, -2, -3, -3}, {3, 4}, 1, 1, 2, 2));
  // Large enough for the parallel copies: every third row of [3000, 40].
  std::vector<double> lv, sv;
  Tensor lx = random_tensor(Shape{3000, 40}, DType::kFloat32, 54, &lv);
  Tensor ls = random_tensor(Shape{1000, 40}, DType::kFloat32, 55, &sv);
  test::expect_close(slice_scatter(lx, ls, 0, 2, 3000, 3), slice_scatter_ref(lv, sv, {3000, 40}, 0, 2, 1000, 3));
  // A huge step takes one element, as in slice.
  Tensor m = Tensor::from_vector<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape{2, 5});
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(slice_scatter(m, Tensor::from_vector<int64_t>({-1, -2, -3, -4, -5}, Shape{1, 5}), 0, 1, kMax, kMax)
                .to_vector<int64_t>(),
            (std::vector<int64_t>{0, 1, 2, 3, 4, -1, -2, -3, -4, -5}));
}

TEST(ShapeSliceScatter, Errors) {
  Tensor x = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Tensor src = Tensor::from_vector<float>({7, 8}, Shape{2, 1});
  expect_error([&] { slice_scatter(x, Tensor::from_vector<float>({7, 8}, Shape{1, 2}), 1, 0, 1); }, ErrorCode::kShape,
               "slice_scatter");
  try {
    slice_scatter(x, src, 1, 0, 3, 2);  // the slice has 2 columns, src 1
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("[2, 1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 2]"), std::string::npos) << e.what();
  }
  expect_error([&] { slice_scatter(x, cast(src, DType::kFloat64), 1, 0, 1); }, ErrorCode::kDType, "slice_scatter");
  expect_error([&] { slice_scatter(x, src, 1, 0, 1, 0); }, ErrorCode::kValue, "slice_scatter");
  expect_error([&] { slice_scatter(x, src, 2, 0, 1); }, ErrorCode::kIndex, "slice_scatter");
  expect_error([&] { slice_scatter(Tensor::scalar<float>(1), Tensor::scalar<float>(2), 0, 0, 1); }, ErrorCode::kShape,
               "slice_scatter");
}

}  // namespace
}  // namespace spore
