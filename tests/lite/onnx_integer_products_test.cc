// ONNX's integer products (NOTE [Exact integer products in float32]): MatMulInteger and
// ConvInteger whose sums pass float32's 24 bits, so that Lite must cut them into exact float32
// runs, against int64 sums computed here.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "../io/io_test_util.h"
#include "onnx_build_util.h"
#include "spore/lite.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

template <typename T>
void add_initializer(::onnx::ModelProto& m, const std::string& name, int32_t type, std::vector<int64_t> dims, const std::vector<T>& v) {
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(type);
  for (int64_t d : dims) t->add_dims(d);
  for (T x : v) t->add_int32_data((int32_t)x);
}

// Values drawn from the whole range, the first `extreme` of them at the corner whose products
// are largest, so that a row's sum passes 2^24.
template <typename T>
std::vector<T> values(size_t n, size_t extreme, T corner, uint64_t seed) {
  std::mt19937 rng((unsigned)seed);
  std::uniform_int_distribution<int> u(std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = i < extreme ? corner : (T)u(rng);
  return v;
}

// B an initializer takes integer_matmul (NOTE [Integer products]); B a graph input, the exact
// float32 runs. Both must give the int64 sums.
class MatMulIntegerB : public ::testing::TestWithParam<bool> {};

TEST_P(MatMulIntegerB, PastFloat32sBitsIsExact) {
  const bool b_constant = GetParam();
  const int64_t rows = 3, k = 1300, cols = 5;
  const uint8_t a_zp = 7;
  const int8_t b_zp = -3;
  std::vector<uint8_t> a = values<uint8_t>((size_t)(rows * k), (size_t)k, 255, 1);  // row 0: all 255
  std::vector<int8_t> b = values<int8_t>((size_t)(k * cols), 0, 0, 2);
  for (int64_t i = 0; i < k; ++i) b[(size_t)(i * cols)] = -128;  // column 0: all -128
  auto m = base_model(17);
  add_input(m, "a", {std::to_string(rows), std::to_string(k)}, ::onnx::TensorProto::UINT8);
  if (b_constant) add_initializer(m, "b", ::onnx::TensorProto::INT8, {k, cols}, b);
  else add_input(m, "b", {std::to_string(k), std::to_string(cols)}, ::onnx::TensorProto::INT8);
  add_initializer(m, "a_zp", ::onnx::TensorProto::UINT8, {}, std::vector<uint8_t>{a_zp});
  add_initializer(m, "b_zp", ::onnx::TensorProto::INT8, {}, std::vector<int8_t>{b_zp});
  add_node(m, "MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"});
  add_output(m, "y");
  std::vector<Tensor> inputs{Tensor::from_vector(a, Shape{rows, k})};
  if (!b_constant) inputs.push_back(Tensor::from_vector(b, Shape{k, cols}));
  const Tensor y = run_onnx(m, inputs, "mmi");
  ASSERT_EQ(y.dtype(), DType::kInt32);
  const std::vector<int32_t> got = y.to_vector<int32_t>();
  int64_t largest = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += ((int64_t)a[(size_t)(r * k + i)] - a_zp) * ((int64_t)b[(size_t)(i * cols + j)] - b_zp);
      largest = std::max(largest, std::abs(sum));
      EXPECT_EQ(got[(size_t)(r * cols + j)], sum) << r << "," << j;
    }
  EXPECT_GT(largest, int64_t{1} << 24) << "the case must need more than one float32 run";
}
INSTANTIATE_TEST_SUITE_P(OnnxIntegerProducts, MatMulIntegerB, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "BConstant" : "BInput"; });

// ddddocr's classifier's form: A [t, 1, k] uint8 from DynamicQuantizeLinear with its zero point a
// graph value, a constant uint8 B with a zero point per column (int8 after b - 128, the rest an
// offset per column: NOTE [Integer products]).
TEST(OnnxIntegerProducts, MatMulIntegerUint8WeightsWithColumnZeroPoints) {
  const int64_t t = 4, k = 700, cols = 9;
  std::vector<uint8_t> a = values<uint8_t>((size_t)(t * k), (size_t)k, 255, 5);
  std::vector<uint8_t> b = values<uint8_t>((size_t)(k * cols), 0, 0, 6);
  for (int64_t i = 0; i < k; ++i) b[(size_t)(i * cols)] = 0;  // column 0 all 0, zero point 255 below
  std::vector<uint8_t> b_zp = values<uint8_t>((size_t)cols, 0, 0, 7);
  b_zp[0] = 255;
  const uint8_t a_zp = 3;
  auto m = base_model(17);
  add_input(m, "a", {std::to_string(t), "1", std::to_string(k)}, ::onnx::TensorProto::UINT8);
  add_input(m, "a_zp", {}, ::onnx::TensorProto::UINT8);
  add_initializer(m, "b", ::onnx::TensorProto::UINT8, {k, cols}, b);
  add_initializer(m, "b_zp", ::onnx::TensorProto::UINT8, {cols}, b_zp);
  add_node(m, "MatMulInteger", {"a", "b", "a_zp", "b_zp"}, {"y"});
  add_output(m, "y");
  const Tensor y = run_onnx(m, {Tensor::from_vector(a, Shape{t, 1, k}), Tensor::from_vector<uint8_t>({a_zp}, Shape{})}, "mmi_u8");
  ASSERT_EQ(y.shape(), (Shape{t, 1, cols}));
  ASSERT_EQ(y.dtype(), DType::kInt32);
  const std::vector<int32_t> got = y.to_vector<int32_t>();
  for (int64_t r = 0; r < t; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      int64_t sum = 0;
      for (int64_t i = 0; i < k; ++i) sum += ((int64_t)a[(size_t)(r * k + i)] - a_zp) * ((int64_t)b[(size_t)(i * cols + j)] - b_zp[(size_t)j]);
      EXPECT_EQ(got[(size_t)(r * cols + j)], sum) << r << "," << j;
    }
}

TEST(OnnxIntegerProducts, ConvIntegerPastFloat32sBitsIsExact) {
  const int64_t cin = 70, cout = 4, hw = 5;
  std::vector<uint8_t> x = values<uint8_t>((size_t)(cin * hw * hw), 0, 0, 3);
  std::vector<int8_t> w = values<int8_t>((size_t)(cout * cin * 9), (size_t)(cin * 9), -127, 4);  // filter 0: all -127 (odd products)
  for (int64_t c = 0; c < cin; ++c)  // the top-left 3x3 window all 255
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 3; ++j) x[(size_t)((c * hw + i) * hw + j)] = 255;
  auto m = base_model(17);
  add_input(m, "x", {"1", std::to_string(cin), std::to_string(hw), std::to_string(hw)}, ::onnx::TensorProto::UINT8);
  add_initializer(m, "w", ::onnx::TensorProto::INT8, {cout, cin, 3, 3}, w);
  add_node(m, "ConvInteger", {"x", "w"}, {"y"});
  add_output(m, "y");
  const Tensor y = run_onnx(m, {Tensor::from_vector(x, Shape{1, cin, hw, hw})}, "convi");
  ASSERT_EQ(y.shape(), (Shape{1, cout, 3, 3}));
  const std::vector<int32_t> got = y.to(DType::kInt32).to_vector<int32_t>();
  int64_t largest = 0;
  for (int64_t o = 0; o < cout; ++o)
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t q = 0; q < 3; ++q) {
        int64_t sum = 0;
        for (int64_t c = 0; c < cin; ++c)
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j)
              sum += (int64_t)x[(size_t)((c * hw + p + i) * hw + q + j)] * w[(size_t)(((o * cin + c) * 3 + i) * 3 + j)];
        largest = std::max(largest, std::abs(sum));
        EXPECT_EQ(got[(size_t)((o * 3 + p) * 3 + q)], sum) << o << "," << p << "," << q;
      }
  EXPECT_GT(largest, int64_t{1} << 24) << "the case must need more than one float32 run";
}

}  // namespace
}  // namespace spore::test
