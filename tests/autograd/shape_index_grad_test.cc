// Backward rules of the shape and index ops (NOTE [Shape gradients] in src/ops/shape.cc, NOTE
// [Index gradients] in src/ops/index.cc), and of the shape_api.cc composites built on them:
// float64 central differences (gradcheck.h) for every op, hand-computed gradients where indices
// repeat, non-contiguous inputs, and a second-order check through gather and slice.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "gradcheck.h"
#include "spore/op_registry.h"

namespace spore {
namespace {

using test::gradcheck;
using Xs = const std::vector<Tensor>&;  // the inputs of a function under test

// float64 values in [-1, 1] from the test's own generator.
Tensor rnd(const Shape& shape, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(-1, 1);
  std::vector<double> v((size_t)shape.numel());
  for (double& x : v) x = dist(gen);
  return Tensor::from_vector(v, shape);
}

Tensor ids(const std::vector<int64_t>& v, const Shape& shape) {
  return Tensor::from_vector<int64_t>(v, shape);
}

// value_and_grad with an explicit cotangent: the gradient is then exactly the vector-Jacobian
// product of `sens`, which tests below compute by hand.
Tensor vjp(const TensorFn& fn, const Tensor& x, const Tensor& sens) {
  return value_and_grad(fn, 0, {}, sens)({x}).input_grads[0];
}

void expect_values(const Tensor& got, const std::vector<double>& want) {
  EXPECT_EQ(got.to_vector<double>(), want);
}

// ---- the tape sees views ----------------------------------------------------------------------
TEST(ShapeIndexGrad, ViewOpsReachTheDispatchObserver) {
  struct Names : DispatchObserver {
    std::vector<std::string> seen;
    void on_op(const OpDef& d, std::span<const Tensor>, const Attrs&,
               std::span<const Tensor>) override {
      seen.push_back(d.name);
    }
  } names;
  Tensor x = rnd(Shape{2, 3}, 1);
  {
    DispatchObserverGuard guard(&names);
    Tensor y = expand(slice(permute(reshape(x, {3, 2}), {1, 0}), 1, 0, 3, 2), {4, 2, 2});
  }
  EXPECT_EQ(names.seen, (std::vector<std::string>{"reshape", "permute", "slice", "expand"}));
}

// ---- view ops ---------------------------------------------------------------------------------
TEST(ShapeIndexGrad, Reshape) {
  gradcheck([](Xs x) { return reshape(x[0], {3, -1, 2}); }, {rnd(Shape{2, 3, 2}, 2)});
  // A transposed input cannot be viewed with the new shape: reshape copies, and the gradient
  // must still reach the original through the copy.
  gradcheck([](Xs x) { return reshape(transpose(x[0], 0, 1), {6}); }, {rnd(Shape{2, 3}, 3)});
}

TEST(ShapeIndexGrad, Permute) {
  gradcheck([](Xs x) { return permute(x[0], {2, 0, 1}); }, {rnd(Shape{2, 3, 4}, 4)});
  gradcheck([](Xs x) { return permute(x[0], {-1, 0, -2}); }, {rnd(Shape{2, 3, 4}, 5)});
}

TEST(ShapeIndexGrad, Slice) {
  gradcheck([](Xs x) { return slice(x[0], 1, 1, 6, 2); }, {rnd(Shape{3, 6}, 6)});
  gradcheck([](Xs x) { return slice(x[0], 0, -3, 100, 1); }, {rnd(Shape{4, 2}, 7)});
  // A slice of a permuted (non-contiguous) tensor, then a slice of that slice.
  gradcheck(
      [](Xs x) {
        return slice(slice(permute(x[0], {1, 0, 2}), 0, 1, 4, 2), 2, 0, 2);
      },
      {rnd(Shape{2, 4, 3}, 8)});
}

TEST(ShapeIndexGrad, Expand) {
  gradcheck([](Xs x) { return expand(x[0], {2, 3, 4}); }, {rnd(Shape{3, 1}, 9)});
  gradcheck([](Xs x) { return expand(x[0], {2, -1, 3}); }, {rnd(Shape{1, 2, 1}, 10)});
  gradcheck([](Xs x) { return expand(x[0], {5}); }, {rnd(Shape{}, 11)});
}

// ---- kernels ------------------------------------------------------------------------------------
TEST(ShapeIndexGrad, Concat) {
  gradcheck(
      [](Xs x) {
        return concat({x[0], x[1], x[2]}, 1);
      },
      {rnd(Shape{2, 1}, 12), rnd(Shape{2, 3}, 13), rnd(Shape{2, 2}, 14)});
  // One input used twice: its two slices of the gradient add up.
  gradcheck(
      [](Xs x) {
        return concat({x[0], x[1], x[0]}, -2);
      },
      {rnd(Shape{2, 3}, 15), rnd(Shape{1, 3}, 16)});
}

TEST(ShapeIndexGrad, SliceScatter) {
  gradcheck([](Xs x) { return slice_scatter(x[0], x[1], 1, 0, 5, 3); },
            {rnd(Shape{4, 5}, 17), rnd(Shape{4, 2}, 18)});
  // src a transposed view, x an expanded one.
  gradcheck(
      [](Xs x) {
        return slice_scatter(expand(x[0], {3, 4}), transpose(x[1], 0, 1), 0, -2, 3);
      },
      {rnd(Shape{1, 4}, 19), rnd(Shape{4, 2}, 20)});
}

TEST(ShapeIndexGrad, Gather) {
  // Repeated indices along both axes; index larger than x along the gather axis.
  Tensor i1 = ids({0, 4, 4, 1, 0, 4, 2, 2, 2, 3, 1, 0, 4, 4, 4, 0, 1, 2}, Shape{3, 6});
  gradcheck([&](Xs x) { return gather(x[0], 1, i1); }, {rnd(Shape{4, 5}, 21)});
  Tensor i0 = ids({3, 3, 0, 1, 1, 3}, Shape{3, 2});
  gradcheck([&](Xs x) { return gather(x[0], 0, i0); }, {rnd(Shape{4, 5}, 22)});
}

TEST(ShapeIndexGrad, IndexSelect) {
  Tensor i = ids({2, 0, 2, 2, 1}, Shape{5});
  for (int axis = 0; axis < 3; ++axis) {
    SCOPED_TRACE("axis " + std::to_string(axis));
    gradcheck([&](Xs x) { return index_select(x[0], axis, i); }, {rnd(Shape{3, 3, 3}, 23)});
  }
  // A non-contiguous x.
  gradcheck([&](Xs x) { return index_select(transpose(x[0], 0, 1), 1, i); },
            {rnd(Shape{3, 2}, 24)});
}

TEST(ShapeIndexGrad, Embedding) {
  Tensor id = ids({4, 0, 2, 2, 4, 4}, Shape{2, 3});
  gradcheck([&](Xs x) { return embedding(id, x[0]); }, {rnd(Shape{5, 3}, 25)});
  // Scalar ids and a transposed table.
  gradcheck([&](Xs x) { return embedding(ids({1}, Shape{}), transpose(x[0], 0, 1)); },
            {rnd(Shape{2, 3}, 26)});
}

TEST(ShapeIndexGrad, ScatterAdd) {
  // index [5, 2] with repeats into x [4, 3] along axis 0; src [6, 3] is larger than index.
  Tensor i0 = ids({1, 0, 3, 0, 1, 0, 1, 2, 3, 3}, Shape{5, 2});
  gradcheck([&](Xs x) { return scatter_add(x[0], 0, i0, x[1]); },
            {rnd(Shape{4, 3}, 27), rnd(Shape{6, 3}, 28)});
  Tensor i1 = ids({2, 2, 0, 1, 1, 1}, Shape{2, 3});
  gradcheck([&](Xs x) { return scatter_add(x[0], -1, i1, x[1]); },
            {rnd(Shape{3, 3}, 29), rnd(Shape{2, 4}, 30)});
}

// ---- composites of shape_api.cc ---------------------------------------------------------------
TEST(ShapeIndexGrad, Composites) {
  gradcheck([](Xs x) { return squeeze(x[0]); }, {rnd(Shape{3, 1, 2}, 31)});
  gradcheck([](Xs x) { return squeeze(x[0], -1); }, {rnd(Shape{3, 1}, 32)});
  gradcheck([](Xs x) { return unsqueeze(x[0], 1); }, {rnd(Shape{3, 2}, 33)});
  gradcheck([](Xs x) { return flatten(x[0], 1); }, {rnd(Shape{2, 3, 2}, 34)});
  gradcheck([](Xs x) { return transpose(x[0], 0, 2); }, {rnd(Shape{2, 3, 2}, 35)});
  // The pieces of split and chunk reassembled in another order (and one piece dropped).
  gradcheck(
      [](Xs x) {
        std::vector<Tensor> p = split(x[0], {1, 3, 2}, 1);
        return concat({p[2], p[0]}, 1);
      },
      {rnd(Shape{2, 6}, 36)});
  gradcheck(
      [](Xs x) {
        std::vector<Tensor> c = chunk(x[0], 3, 0);
        return concat({c[2], c[1], c[2]}, 1);
      },
      {rnd(Shape{3, 2}, 37)});
  gradcheck(
      [](Xs x) {
        return stack({x[0], x[1], x[0]}, 1);
      },
      {rnd(Shape{2, 3}, 38), rnd(Shape{2, 3}, 39)});
}

// ---- repeated indices accumulate: hand-computed vector-Jacobian products ------------------------
TEST(ShapeIndexGrad, RepeatedIndicesAccumulate) {
  Tensor x = Tensor::from_vector<double>({0, 1, 2, 3}, Shape{4});
  Tensor sens = Tensor::from_vector<double>({1, 2, 3, 4}, Shape{4});
  // gather: outputs 0, 1, 3 read x[1], output 2 reads x[3].
  Tensor gi = ids({1, 1, 3, 1}, Shape{4});
  expect_values(vjp([&](Xs v) { return gather(v[0], 0, gi); }, x, sens), {0, 7, 0, 3});
  expect_values(vjp([&](Xs v) { return index_select(v[0], 0, gi); }, x, sens), {0, 7, 0, 3});
  // embedding: ids 2, 0, 2, 2 into a [3, 2] table; row 1 is never read.
  Tensor table = Tensor::from_vector<double>({0, 0, 0, 0, 0, 0}, Shape{3, 2});
  Tensor es = Tensor::from_vector<double>({1, 2, 3, 4, 5, 6, 7, 8}, Shape{4, 2});
  Tensor ei = ids({2, 0, 2, 2}, Shape{4});
  expect_values(vjp([&](Xs v) { return embedding(ei, v[0]); }, table, es),
                {3, 4, 0, 0, 1 + 5 + 7, 2 + 6 + 8});
  // scatter_add: src's gradient reads the output gradient at the (repeated) indices.
  Tensor src = Tensor::from_vector<double>({0, 0, 0}, Shape{3});
  Tensor si = ids({3, 0, 3}, Shape{3});
  expect_values(
      vjp([&](Xs v) { return scatter_add(zeros({4}, DType::kFloat64), 0, si, v[0]); }, src, sens),
      {4, 1, 4});
}

// Gradients of integer inputs are not asked for, and a float32 input still gets a float32 gradient.
TEST(ShapeIndexGrad, DTypesOfGradients) {
  Tensor table = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  Tensor g = vjp(
      [](Xs v) {
        return embedding(ids({1, 1}, Shape{2}), v[0]);
      },
      table, Tensor::from_vector<float>({1, 1, 1, 1}, Shape{2, 2}));
  EXPECT_EQ(g.dtype(), DType::kFloat32);
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{0, 0, 2, 2}));
}

// ---- second order -------------------------------------------------------------------------------
// f(x) = sum(gather(x)^2) has gradient 2 * count[i] * x[i] (count: how often index names i), so
// the gradient of that gradient runs the backward rules of scatter_add and gather themselves.
TEST(ShapeIndexGrad, SecondOrderThroughGatherAndSlice) {
  Tensor gi = ids({2, 0, 2, 2, 3}, Shape{5});
  TensorFn f = [&](Xs v) {
    Tensor g = gather(v[0], 0, gi);
    return sum(mul(g, g));
  };
  Tensor x = Tensor::from_vector<double>({0.5, -1, 2, 3}, Shape{4});
  expect_values(value_and_grad(f)({x}).input_grads[0], {2 * 1 * 0.5, 0, 2 * 3 * 2.0, 2 * 1 * 3.0});
  gradcheck([&](Xs v) { return value_and_grad(f)(v).input_grads[0]; }, {rnd(Shape{4}, 40)});

  TensorFn h = [](Xs v) {
    Tensor s = slice(expand(v[0], {2, 4}), 1, 1, 4, 2);
    return sum(mul(s, s));
  };
  gradcheck([&](Xs v) { return value_and_grad(h)(v).input_grads[0]; }, {rnd(Shape{4}, 41)});
}

}  // namespace
}  // namespace spore
