// dtype facts, promotion (NOTE [Type promotion]) and the 16-bit float conversions, checked
// against independent definitions (frexp/ldexp arithmetic, not bit tricks).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "spore/dtype.h"
#include "spore/error.h"

namespace spore {
namespace {

// Reference: round a double to binary16 by scaling its ulp, ties to even (std::nearbyint).
double ref_round_half(double x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  double ax = std::fabs(x);
  if (ax >= 65520.0) return std::copysign(INFINITY, x);
  int e;
  std::frexp(ax, &e);                 // ax = m * 2^e, m in [0.5, 1)
  int exp = std::max(e - 1, -14);      // subnormals share the exponent -14
  double ulp = std::ldexp(1.0, exp - 10);
  return std::copysign(std::nearbyint(ax / ulp) * ulp, x);
}
double ref_round_bf16(double x) {
  if (std::isnan(x) || std::isinf(x)) return x;
  float f = (float)x;
  double ax = std::fabs((double)f);
  if (ax == 0) return f;
  int e;
  std::frexp(ax, &e);
  double ulp = std::ldexp(1.0, std::max(e - 1, -126) - 7);
  double r = std::nearbyint(ax / ulp) * ulp;
  if (r > 3.3895313892515355e38) r = INFINITY;
  return std::copysign(r, (double)f);
}

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  for (DType t : kAllDTypes) EXPECT_EQ(dtype_from_name(dtype_name(t)), t);
  EXPECT_EQ(dtype_from_name("bf16"), DType::kBFloat16);
  try {
    dtype_from_name("float8");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
    EXPECT_NE(std::string(e.what()).find("float8"), std::string::npos);
  }
}

TEST(DType, Promotion) {
  EXPECT_EQ(promote_types(DType::kInt8, DType::kUInt8), DType::kInt32);
  EXPECT_EQ(promote_types(DType::kUInt8, DType::kInt64), DType::kInt64);
  EXPECT_EQ(promote_types(DType::kBool, DType::kUInt8), DType::kUInt8);
  EXPECT_EQ(promote_types(DType::kInt64, DType::kFloat16), DType::kFloat16);
  EXPECT_EQ(promote_types(DType::kFloat16, DType::kBFloat16), DType::kFloat32);
  EXPECT_EQ(promote_types(DType::kBFloat16, DType::kFloat64), DType::kFloat64);
  EXPECT_EQ(promote_types(DType::kFloat32, DType::kFloat16), DType::kFloat32);
  for (DType a : kAllDTypes)
    for (DType b : kAllDTypes) EXPECT_EQ(promote_types(a, b), promote_types(b, a));
  EXPECT_EQ(promote_with_scalar(DType::kFloat16, true), DType::kFloat16);
  EXPECT_EQ(promote_with_scalar(DType::kInt32, true), DType::kFloat32);
  EXPECT_EQ(promote_with_scalar(DType::kInt32, false), DType::kInt32);
  EXPECT_EQ(promote_with_scalar(DType::kBool, false), DType::kInt64);
}

TEST(Half, RoundTripsEveryBitPattern) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    Half h = Half::from_bits((uint16_t)b);
    float f = h;
    if (std::isnan(f)) continue;
    EXPECT_EQ(Half(f).bits, b) << std::hex << b;
  }
}

TEST(Half, RoundsLikeTheReference) {
  // Every float between representable halves, including ties, subnormals and overflow.
  for (uint32_t b = 0; b < 0x7c00; b += 7) {
    double lo = (float)Half::from_bits((uint16_t)b);
    double hi = (float)Half::from_bits((uint16_t)(b + 1));
    for (double t : {0.25, 0.5, 0.75}) {
      float x = (float)(lo + (hi - lo) * t);
      EXPECT_EQ((double)(float)Half(x), ref_round_half(x)) << x;
      EXPECT_EQ((double)(float)Half(-x), ref_round_half(-x)) << -x;
    }
  }
  EXPECT_TRUE(std::isinf((float)Half(70000.f)));
  EXPECT_TRUE(std::isnan((float)Half(NAN)));
  EXPECT_EQ((float)Half(65504.f), 65504.f);
}

TEST(BFloat16, RoundsLikeTheReference) {
  uint32_t seed = 12345;
  for (int i = 0; i < 200000; ++i) {
    seed = seed * 1664525u + 1013904223u;
    float x = bits_float(seed);
    if (std::isnan(x)) continue;
    double want = ref_round_bf16(x);
    float got = BFloat16(x);
    if (std::isinf(want)) EXPECT_TRUE(std::isinf(got)) << x;
    else EXPECT_EQ((double)got, want) << x;
  }
  EXPECT_TRUE(std::isnan((float)BFloat16(NAN)));
}

}  // namespace
}  // namespace spore
