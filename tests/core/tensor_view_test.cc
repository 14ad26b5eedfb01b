// NOTE [Views]: views share storage with their base, writes through one are seen through the
// other, views keep their storage alive, and contiguous()/clone()/copy_ move data only as
// documented. Chains of views (reshape of a permute of a slice...) address the right elements.
#include <gtest/gtest.h>

#include <numeric>

#include "spore/ops.h"
#include "spore/tensor.h"

namespace spore {
namespace {

std::vector<float> iota_f(int n) {
  std::vector<float> v((size_t)n);
  std::iota(v.begin(), v.end(), 0.f);
  return v;
}

TEST(TensorView, EveryViewOpSharesStorageBothWays) {
  Tensor x = Tensor::from_vector<float>(iota_f(24), Shape{2, 3, 4});
  const std::vector<Tensor> views = {
      reshape(x, {6, 4}),        permute(x, {2, 0, 1}),   slice(x, 2, 1, 4, 2), expand(slice(x, 0, 0, 1), {5, 3, 4}),
      transpose(x, 0, 2),        squeeze(slice(x, 1, 1, 2)), unsqueeze(x, 1),      flatten(x, 0, 1),
      split(x, {1, 3}, 2)[1],    chunk(x, 2, 0)[1],
  };
  for (const Tensor& v : views) {
    SCOPED_TRACE(v.shape().str() + " strides " + v.strides().str());
    EXPECT_TRUE(v.same_storage(x));
  }
  // Write through a strided view, read through the base and through another view.
  Tensor cols = slice(x, 2, 1, 4, 2);  // x[:, :, 1::2]
  cols.copy_(Tensor::from_vector<float>(std::vector<float>(12, -1.f), Shape{2, 3, 2}));
  std::vector<float> got = x.to_vector<float>();
  for (int i = 0; i < 24; ++i) EXPECT_EQ(got[(size_t)i], i % 4 == 1 || i % 4 == 3 ? -1.f : (float)i) << i;
  Tensor t = transpose(x, 0, 2);  // [4, 3, 2]: t[k][j][i] = x[i][j][k]
  EXPECT_EQ(t.to_vector<float>()[1], 12.f);  // t[0][0][1] = x[1][0][0]
  EXPECT_EQ(t.to_vector<float>()[6], -1.f);  // t[1][0][0] = x[0][0][1]
  // Write into the base, read through a view.
  x.data<float>()[23] = 99;
  EXPECT_EQ(reshape(x, {24}).to_vector<float>()[23], 99.f);
  EXPECT_EQ(permute(x, {2, 1, 0}).to_vector<float>()[23], 99.f);
}

TEST(TensorView, ViewsKeepStorageAlive) {
  Tensor v;
  Storage* s = nullptr;
  {
    Tensor x = Tensor::from_vector<float>(iota_f(6), Shape{2, 3});
    s = x.storage();
    v = slice(transpose(x, 0, 1), 0, 1, 3);  // rows 1, 2 of the transpose
    EXPECT_EQ(s->use_count(), 2);
  }
  EXPECT_EQ(s->use_count(), 1);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{1, 4, 2, 5}));
}

TEST(TensorView, ChainsAddressTheRightElements) {
  // x[i][j] = 10 i + j, shape [6, 8]; take x[1::2, 2:8:3] (3 x 2), transpose, reshape, expand.
  std::vector<float> v(48);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 8; ++j) v[(size_t)(i * 8 + j)] = (float)(10 * i + j);
  Tensor x = Tensor::from_vector<float>(v, Shape{6, 8});
  Tensor s = slice(slice(x, 0, 1, 6, 2), 1, 2, 8, 3);
  EXPECT_EQ(s.shape(), (Shape{3, 2}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{12, 15, 32, 35, 52, 55}));
  Tensor t = transpose(s, 0, 1);  // [2, 3]
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{12, 32, 52, 15, 35, 55}));
  Tensor r = reshape(t, {2, 3, 1});
  EXPECT_TRUE(r.same_storage(x));
  Tensor e = expand(r, {2, 2, 3, 2});
  EXPECT_EQ(e.shape(), (Shape{2, 2, 3, 2}));
  std::vector<float> ev = e.to_vector<float>();
  EXPECT_EQ(ev.size(), 24u);
  EXPECT_EQ(ev[0], 12.f);
  EXPECT_EQ(ev[1], 12.f);
  EXPECT_EQ(ev[7], 15.f);   // [0][1][0][1] -> t[1][0]
  EXPECT_EQ(ev[23], 55.f);  // [1][1][2][1] -> t[1][2]
  Tensor flat = reshape(t, {6});  // not expressible with strides: a copy
  EXPECT_FALSE(flat.same_storage(x));
  EXPECT_EQ(flat.to_vector<float>(), (std::vector<float>{12, 32, 52, 15, 35, 55}));
}

TEST(TensorView, ContiguousCloneAndCopyInto) {
  Tensor x = Tensor::from_vector<float>(iota_f(6), Shape{2, 3});
  EXPECT_TRUE(x.contiguous().same_storage(x));
  Tensor t = transpose(x, 0, 1);
  EXPECT_FALSE(t.is_contiguous());
  Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.same_storage(x));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  Tensor k = x.clone();
  EXPECT_FALSE(k.same_storage(x));
  k.data<float>()[0] = 100;
  EXPECT_EQ(x.to_vector<float>()[0], 0.f);
  // copy_ broadcasts its source into a view.
  slice(x, 0, 1, 2).copy_(Tensor::from_vector<float>({7}, Shape{1}));
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{0, 1, 2, 7, 7, 7}));
  // An expanded view reads the same memory for every broadcast element.
  Tensor row = Tensor::from_vector<float>({1, 2}, Shape{2});
  Tensor e = expand(row, {3, 2});
  row.data<float>()[1] = 20;
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{1, 20, 1, 20, 1, 20}));
}

TEST(TensorView, EmptyViews) {
  Tensor x = Tensor::from_vector<float>(iota_f(6), Shape{2, 3});
  Tensor e = slice(x, 1, 3, 10);
  EXPECT_EQ(e.shape(), (Shape{2, 0}));
  EXPECT_EQ(e.numel(), 0);
  EXPECT_TRUE(e.to_vector<float>().empty());
  EXPECT_EQ(reshape(e, {0, 7}).shape(), (Shape{0, 7}));
  EXPECT_EQ(permute(e, {1, 0}).shape(), (Shape{0, 2}));
  EXPECT_EQ(concat({e, x}, 1).to_vector<float>(), x.to_vector<float>());
}

}  // namespace
}  // namespace spore
