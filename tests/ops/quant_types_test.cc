// The one table of quantization types (include/spore/quant.h, NOTE [Quantization types]): its
// rows agree with ggml's numbering and sizes, every type Spore reads dequantises random blocks to
// the `gguf` package's own numpy values bit for bit (tests/fixtures/quant/blocks.gguf, written by
// tools/make_quant_fixtures.py), and hostile blocks read as values, never out of bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <set>

#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/quant.h"
#include "ops/llm_test_util.h"
#include "test_util.h"

namespace spore::test {
namespace {

std::filesystem::path blocks_fixture() {
  return std::filesystem::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "quant" / "blocks.gguf";
}

TEST(QuantTypes, OneRowPerGgmlType) {
  std::set<uint32_t> ids;
  std::set<std::string> keys;
  for (const QuantTraits& t : all_quant_types()) {
    EXPECT_TRUE(ids.insert((uint32_t)t.type).second) << t.name;
    EXPECT_TRUE(keys.insert(t.key).second) << t.key;
    EXPECT_EQ(find_quant_traits((uint32_t)t.type), &t);
    EXPECT_EQ(parse_quant_type(t.key), t.type);
    EXPECT_EQ(parse_quant_type(t.name), t.type);
    EXPECT_GT(t.block_bytes, 0u);
    // A type the engine multiplies can also be read back (the loader's embedding rows).
    if (t.activations != QuantActivations::kNone) {
      EXPECT_NE(t.dequantize, nullptr) << t.name;
    }
  }
  // ggml's numbering and block geometry (ggml.h, ggml-common.h), stated independently here.
  struct Want {
    uint32_t id;
    const char* name;
    uint32_t block, bytes;
  };
  const Want want[] = {{0, "F32", 1, 4},         {1, "F16", 1, 2},          {2, "Q4_0", 32, 18},
                       {3, "Q4_1", 32, 20},      {6, "Q5_0", 32, 22},       {7, "Q5_1", 32, 24},
                       {8, "Q8_0", 32, 34},      {9, "Q8_1", 32, 36},       {10, "Q2_K", 256, 84},
                       {11, "Q3_K", 256, 110},   {12, "Q4_K", 256, 144},    {13, "Q5_K", 256, 176},
                       {14, "Q6_K", 256, 210},   {15, "Q8_K", 256, 292},    {16, "IQ2_XXS", 256, 66},
                       {17, "IQ2_XS", 256, 74},  {18, "IQ3_XXS", 256, 98},  {19, "IQ1_S", 256, 50},
                       {20, "IQ4_NL", 32, 18},   {21, "IQ3_S", 256, 110},   {22, "IQ2_S", 256, 82},
                       {23, "IQ4_XS", 256, 136}, {29, "IQ1_M", 256, 56},    {30, "BF16", 1, 2},
                       {34, "TQ1_0", 256, 54},   {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},
                       {40, "NVFP4", 64, 36},    {41, "Q1_0", 128, 18},     {42, "Q2_0", 64, 18}};
  for (const Want& w : want) {
    const QuantTraits* t = find_quant_traits(w.id);
    ASSERT_NE(t, nullptr) << w.name;
    EXPECT_STREQ(t->name, w.name);
    EXPECT_EQ(t->block_size, w.block) << w.name;
    EXPECT_EQ(t->block_bytes, w.bytes) << w.name;
  }
  EXPECT_EQ(find_quant_traits(4), nullptr);  // Q4_2: removed from ggml
  EXPECT_EQ(find_quant_traits(1000), nullptr);
  EXPECT_EQ(error_code_of([] { quant_traits((GgmlType)31); }), ErrorCode::kFormat);
  EXPECT_FALSE(parse_quant_type("q9_9").has_value());
}

// Every type in the fixture: Spore's dequantisation equals gguf.quants' bit for bit (Q8_K, Q1_0 and
// Q2_0, which gguf.quants lacks: the fixture tool's numpy formulas).
TEST(QuantTypes, DequantisationEqualsGgufPackage) {
  const GgufFile g(blocks_fixture());
  int types = 0;
  for (const GgufTensorInfo& t : g.tensors()) {
    if (t.name.find(".expected") != std::string::npos) continue;
    SCOPED_TRACE(t.name);
    ++types;
    const GgufTensorInfo& e = g.tensor_info(t.name + ".expected");
    ASSERT_EQ(e.type, GgmlType::kF32);
    ASSERT_EQ(e.dims, t.dims);
    const int64_t k = (int64_t)t.dims[0], rows = (int64_t)t.dims[1];
    const size_t rb = quant_row_bytes(t.type, k);
    const auto bytes = g.tensor_bytes(t.name);
    const auto want = g.tensor_bytes(e.name);
    std::vector<float> row((size_t)k);
    for (int64_t r = 0; r < rows; ++r) {
      dequantize_row(t.type, bytes.subspan((size_t)r * rb, rb), row);
      ASSERT_EQ(std::memcmp(row.data(), want.data() + (size_t)r * k * 4, (size_t)k * 4), 0)
          << "row " << r << " differs from gguf.quants";
    }
  }
  EXPECT_EQ(types, 26);
}

// Every bit pattern is a block: all-ones bytes (maximal indices, scales NaN) read without a
// fault for every type with a dequantiser (AddressSanitizer checks the bounds), and the table's
// lookups refuse ids outside it.
TEST(QuantTypes, HostileBlocksReadAsValues) {
  for (const QuantTraits& t : all_quant_types()) {
    if (!t.dequantize || t.block_size == 1) continue;
    SCOPED_TRACE(t.name);
    const std::vector<uint8_t> bytes(t.block_bytes, 0xFF);
    std::vector<float> out(t.block_size);
    dequantize_row(t.type, bytes, out);
    std::vector<uint8_t> zeros(t.block_bytes, 0);
    dequantize_row(t.type, zeros, out);
    for (float v : out) EXPECT_TRUE(std::isfinite(v));
    // A truncated block is a typed error, not a read past the end.
    EXPECT_EQ(error_code_of([&] { dequantize_row(t.type, std::span(bytes).first(t.block_bytes - 1), out); }),
              ErrorCode::kShape);
  }
  const std::vector<uint8_t> i32(4, 0);
  std::vector<float> out(1);
  EXPECT_EQ(error_code_of([&] { dequantize_row(GgmlType::kI32, i32, out); }), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace spore::test
