// ONNX element types Spore carries in a wider dtype (NOTE [ONNX carried types]): casts into the
// minifloats against an independent rounding (every code of the format enumerated, the nearest
// value taken, ties to the even code), narrow-integer arithmetic against C++'s own uint16_t and
// int16_t, packed initializers decoded, and what is refused. ONNX's reference outputs for these
// types are checked too, by the node-test subset (ctest lite.onnx_node_subset).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <random>

#include "../io/io_test_util.h"
#include "onnx_build_util.h"
#include "spore/lite.h"
#include "spore/ops.h"

namespace spore::test {
namespace {

// TensorProto.DataType numbers past Debian libonnx 1.12's names.
constexpr int32_t kE4M3FN = 17, kE4M3FNUZ = 18, kE5M2 = 19, kE5M2FNUZ = 20, kUInt4 = 21, kInt4 = 22, kE2M1 = 23, kE8M0 = 24,
                  kUInt2 = 25;

void attr_i(::onnx::NodeProto* n, const std::string& name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

// A minifloat format as its definition gives it, decoded code by code.
struct Format {
  int32_t onnx;
  int ebits, mbits, bias;
  enum Kind { kFN, kFNUZ, kIEEE, kNoSpecials } kind;
  std::optional<double> value(unsigned code) const {
    const unsigned sign = code >> (ebits + mbits), e = (code >> mbits) & ((1u << ebits) - 1), m = code & ((1u << mbits) - 1);
    if (kind == kFNUZ && code == (1u << (ebits + mbits))) return std::nullopt;                      // the one NaN
    if (kind == kFN && e == (1u << ebits) - 1 && m == (1u << mbits) - 1) return std::nullopt;       // NaN
    if (kind == kIEEE && e == (1u << ebits) - 1) return std::nullopt;                                // inf, NaN
    const double mag = e ? std::ldexp(1.0 + m / double(1u << mbits), (int)e - bias) : std::ldexp(m / double(1u << mbits), 1 - bias);
    return sign ? -mag : mag;
  }
  // The non-negative finite values in increasing order, with their codes.
  std::vector<std::pair<double, unsigned>> positives() const {
    std::vector<std::pair<double, unsigned>> v;
    for (unsigned code = 0; code < (1u << (ebits + mbits)); ++code)
      if (auto x = value(code)) v.push_back({*x, code});
    return v;
  }
  // x cast as ONNX's Cast tables define: round to nearest, ties to the even code; past the largest
  // value (after rounding) the saturated or the unsaturated result.
  double cast(double x, bool saturate) const {
    const auto vals = positives();
    const double max = vals.back().first;
    const double over = kind == kNoSpecials || saturate ? max : kind == kIEEE ? INFINITY : NAN;
    if (std::isnan(x)) return kind == kNoSpecials ? 0.0 : NAN;
    const double a = std::fabs(x);
    double r;
    if (std::isinf(a)) {
      r = over;
    } else {
      const double step = vals.back().first - vals[vals.size() - 2].first;  // the spacing at the top
      if (a > max + step / 2 || (a == max + step / 2 && (vals.back().second & 1))) {
        r = over;
      } else if (a >= max) {
        r = max;
      } else {
        size_t hi = 0;
        while (vals[hi].first < a) ++hi;
        if (vals[hi].first == a) {
          r = a;
        } else {
          const auto& lo = vals[hi - 1];
          const double dl = a - lo.first, dh = vals[hi].first - a;
          r = dl < dh ? lo.first : dh < dl ? vals[hi].first : (lo.second & 1) ? vals[hi].first : lo.first;
        }
      }
    }
    if (std::isnan(r)) return r;
    if (x < 0 || std::signbit(x)) r = -r;
    if (kind == kFNUZ && r == 0) r = 0.0;  // no -0
    return r;
  }
};

const Format kFormats[] = {{kE4M3FN, 4, 3, 7, Format::kFN},
                           {kE4M3FNUZ, 4, 3, 8, Format::kFNUZ},
                           {kE5M2, 5, 2, 15, Format::kIEEE},
                           {kE5M2FNUZ, 5, 2, 16, Format::kFNUZ},
                           {kE2M1, 2, 1, 1, Format::kNoSpecials}};

::onnx::ModelProto cast_model(int32_t to, int saturate) {
  auto m = base_model(23);
  add_input(m, "x", {"0"});
  auto* n = add_node(m, "Cast", {"x"}, {"y"});
  attr_i(n, "to", to);
  if (saturate >= 0) attr_i(n, "saturate", saturate);
  add_output(m, "y");
  return m;
}

TEST(OnnxCarriedTypes, MinifloatCastsMatchAnIndependentRounding) {
  for (const Format& f : kFormats) {
    std::vector<float> xs = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e30f, -1e30f, 1e-30f, -1e-30f};
    const auto vals = f.positives();
    for (size_t k = 0; k < vals.size(); ++k) {  // every value, every midpoint (the ties), and just off them
      const double v = vals[k].first;
      for (double s : {1.0, -1.0}) {
        xs.push_back((float)(s * v));
        const double next = k + 1 < vals.size() ? vals[k + 1].first : v + (v - vals[k - 1].first);
        const double mid = (v + next) / 2;
        xs.push_back((float)(s * mid));
        xs.push_back(std::nextafter((float)(s * mid), 0.0f));
        xs.push_back(std::nextafter((float)(s * mid), s * INFINITY));
      }
    }
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-24, 20);
    for (int i = 0; i < 2000; ++i) xs.push_back((float)((i % 2 ? -1 : 1) * std::exp2(u(rng))));
    const Tensor x = Tensor::from_vector(xs, Shape{(int64_t)xs.size()});
    for (int saturate : {-1, 0}) {
      auto m = cast_model(f.onnx, saturate);
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value((int64_t)xs.size());
      const std::vector<float> got = run_onnx(m, {x}, "cast").to_vector<float>();
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = f.cast(xs[i], saturate != 0);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << f.onnx << " " << xs[i];
        else EXPECT_EQ(got[i], want) << "type " << f.onnx << " saturate " << saturate << " x " << xs[i];
      }
    }
  }
}

// float8e8m0 from float32's exponent field, as the spec's round modes define it.
double e8m0_reference(float x, const std::string& mode, bool saturate) {
  if (std::isnan(x)) return NAN;
  if (std::isinf(x)) return saturate ? std::ldexp(1.0, 127) : NAN;
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  unsigned field = (bits >> 23) & 0xFF, mant = bits & 0x7FFFFF;
  bool up = false;
  if (mode == "up") up = mant != 0;
  if (mode == "nearest") up = (mant & 0x400000) && ((mant & 0x3FFFFF) || field > 0);
  if (up && !(saturate && field == 254)) ++field;
  return field == 255 ? NAN : std::ldexp(1.0, (int)field - 127);
}

TEST(OnnxCarriedTypes, E8M0FollowsTheRoundModes) {
  const std::vector<float> xs = {0.0f, 0.124f, 0.25f, 0.375f, 0.75f, 1.1f, 1.5f, 3.0f, 1e-39f, 6e-39f, 1e38f, 3e38f, INFINITY, NAN};
  const Tensor x = Tensor::from_vector(xs, Shape{(int64_t)xs.size()});
  for (const std::string mode : {"up", "down", "nearest"})
    for (int saturate : {0, 1}) {
      auto m = cast_model(kE8M0, saturate);
      attr_s(m.mutable_graph()->mutable_node(0), "round_mode", mode);
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value((int64_t)xs.size());
      const std::vector<float> got = run_onnx(m, {x}, "e8m0").to_vector<float>();
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = e8m0_reference(xs[i], mode, saturate);
        if (std::isnan(want)) EXPECT_TRUE(std::isnan(got[i])) << mode << " " << xs[i];
        else EXPECT_EQ(got[i], (float)want) << mode << " saturate " << saturate << " x " << xs[i];
      }
    }
}

TEST(OnnxCarriedTypes, NarrowIntegerArithmeticWrapsAsTheTypeDoes) {
  const std::vector<int64_t> a16 = {0, 1, 65535, 40000, 123, 65535, 32768, 7};
  const std::vector<int64_t> b16 = {65535, 65535, 65535, 40000, 456, 2, 2, 9};
  for (const std::string op : {"Add", "Sub", "Mul"}) {
    for (int32_t type : {(int32_t)::onnx::TensorProto::UINT16, (int32_t)::onnx::TensorProto::INT16}) {
      const bool is_signed = type == ::onnx::TensorProto::INT16;
      auto m = base_model(17);
      add_input(m, "a", {"8"}, type);
      add_input(m, "b", {"8"}, type);
      add_node(m, op, {"a", "b"}, {"y"});
      add_output(m, "y");
      std::vector<int64_t> want;
      std::vector<int64_t> av, bv;
      for (size_t i = 0; i < a16.size(); ++i) {
        const uint16_t x = (uint16_t)a16[i], y = (uint16_t)b16[i];
        const uint16_t r = op == "Add" ? (uint16_t)(x + y) : op == "Sub" ? (uint16_t)(x - y) : (uint16_t)((uint32_t)x * y);
        av.push_back(is_signed ? (int16_t)x : x), bv.push_back(is_signed ? (int16_t)y : y);
        want.push_back(is_signed ? (int64_t)(int16_t)r : (int64_t)r);
      }
      // The carriers: int16 in int32, uint16 in int64.
      auto as = [&](const std::vector<int64_t>& v) {
        const Tensor t = Tensor::from_vector(v, Shape{8});
        return is_signed ? t.to(DType::kInt32) : t;
      };
      const Tensor y = run_onnx(m, {as(av), as(bv)}, "wrap");
      EXPECT_EQ(y.dtype(), is_signed ? DType::kInt32 : DType::kInt64);
      EXPECT_EQ(y.to(DType::kInt64).to_vector<int64_t>(), want) << op << " " << (is_signed ? "int16" : "uint16");
    }
  }
}

TEST(OnnxCarriedTypes, CastsIntoSubByteIntegers) {
  // From integers: the low bits, read as the type (the spec's fixed-point rule).
  auto m = cast_model(kInt4, -1);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT32);
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(6);
  const Tensor y = run_onnx(m, {Tensor::from_vector(std::vector<int32_t>{7, 8, -9, 200, -8, 15}, Shape{6})}, "int4");
  EXPECT_EQ(y.dtype(), DType::kInt8);
  EXPECT_EQ(y.to(DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{7, -8, 7, -8, -8, -1}));
  // From floating point: truncated; past the range 0, as ONNX's reference gives (the spec leaves
  // it undefined).
  auto f = cast_model(kUInt2, -1);
  f.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(6);
  const Tensor z = run_onnx(f, {Tensor::from_vector(std::vector<float>{-0.5f, 1.9f, 3.7f, 4.0f, -1.0f, NAN}, Shape{6})}, "uint2");
  EXPECT_EQ(z.to(DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 3, 0, 0, 0}));
}

TEST(OnnxCarriedTypes, PackedInitializersAreDecoded) {
  auto m = base_model(21);
  auto* w = m.mutable_graph()->add_initializer();  // int4, two to a byte, low bits first: 1, -2, 7, -8, 3
  w->set_name("w");
  w->set_data_type(kInt4);
  w->add_dims(5);
  w->set_raw_data(std::string{'\xE1', '\x87', '\x03'});
  auto* v = m.mutable_graph()->add_initializer();  // float8e4m3fn: 1, -1.5, 448, NaN
  v->set_name("v");
  v->set_data_type(kE4M3FN);
  v->add_dims(4);
  v->set_raw_data(std::string{'\x38', '\xBC', '\x7E', '\x7F'});
  auto* u = m.mutable_graph()->add_initializer();  // uint4 in int32_data, one byte of two values each
  u->set_name("u");
  u->set_data_type(kUInt4);
  u->add_dims(3);
  u->add_int32_data(0xF2);
  u->add_int32_data(0x09);
  auto* c1 = add_node(m, "Cast", {"w"}, {"wf"});
  attr_i(c1, "to", ::onnx::TensorProto::FLOAT);
  auto* c2 = add_node(m, "Cast", {"v"}, {"vf"});
  attr_i(c2, "to", ::onnx::TensorProto::FLOAT);
  auto* c3 = add_node(m, "Cast", {"u"}, {"uf"});
  attr_i(c3, "to", ::onnx::TensorProto::FLOAT);
  add_node(m, "Concat", {"wf", "vf", "uf"}, {"y"});
  attr_i(m.mutable_graph()->mutable_node(3), "axis", 0);
  add_output(m, "y");
  const std::vector<float> y = run_onnx(m, {}, "packed").to_vector<float>();
  ASSERT_EQ(y.size(), 12u);
  const std::vector<float> want = {1, -2, 7, -8, 3, 1, -1.5f, 448};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[i], want[i]) << i;
  EXPECT_TRUE(std::isnan(y[8]));
  EXPECT_EQ(y[9], 2);
  EXPECT_EQ(y[10], 15);
  EXPECT_EQ(y[11], 9);

  w->set_raw_data(std::string{'\xE1', '\x87'});  // 4 values' bytes for 5
  expect_error([&] { read(m); }, ErrorCode::kFormat, "initializer 'w'", "bytes of raw data");
  w->set_dims(0, int64_t{1} << 31);  // a hostile shape with no data behind it: refused before any allocation
  expect_error([&] { read(m); }, ErrorCode::kFormat, "initializer 'w'", "bytes of raw data");
  u->set_dims(0, int64_t{1} << 30);
  w->set_dims(0, 5);
  w->set_raw_data(std::string{'\xE1', '\x87', '\x03'});
  expect_error([&] { read(m); }, ErrorCode::kFormat, "initializer 'u'", "2 values");
}

TEST(OnnxCarriedTypes, RefusesWhatWouldLoseTheType) {
  {  // arithmetic on a minifloat
    auto m = base_model(23);
    add_input(m, "x", {"3"}, kE4M3FN);
    add_node(m, "Add", {"x", "x"}, {"y"}, "add");
    add_output(m, "y");
    expect_error([&] { read(m); }, ErrorCode::kUnsupported, "Add 'add'", "float8e4m3fn");
  }
  {  // uint32's products need 64 unsigned bits
    auto m = base_model(17);
    add_input(m, "x", {"3"}, ::onnx::TensorProto::UINT32);
    add_node(m, "Mul", {"x", "x"}, {"y"}, "mul");
    add_output(m, "y");
    expect_error([&] { read(m); }, ErrorCode::kUnsupported, "Mul 'mul'", "uint32");
  }
  {  // uint64 is not carried
    auto m = base_model(17);
    add_input(m, "x", {"3"}, ::onnx::TensorProto::UINT64);
    add_node(m, "Identity", {"x"}, {"y"});
    add_output(m, "y");
    expect_error([&] { read(m); }, ErrorCode::kUnsupported, "input 'x'", "UINT64");
  }
}

}  // namespace
}  // namespace spore::test
