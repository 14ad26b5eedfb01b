// Interoperability with the reference safetensors implementation: the fixture was written by the
// Python `safetensors` package (tools/make_io_fixtures.py); Spore must read every value exactly
// and, given the same tensors, write the very same bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "io/io_test_util.h"
#include "spore/format.h"

namespace spore {
namespace {

const std::filesystem::path kFixture =
    std::filesystem::path(SPORE_SOURCE_DIR) / "tests/fixtures/io/reference_dtypes.safetensors";

std::vector<uint16_t> bits16(const Tensor& t) {
  std::vector<uint8_t> b = t.to_bytes();
  std::vector<uint16_t> out(b.size() / 2);
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

TEST(SafeTensorsFixture, ReadsEveryValueWrittenByTheReference) {
  // Pinned: a regenerated fixture must be a deliberate change.
  EXPECT_EQ(sha256_file(kFixture),
            "3d378e2f0cb4cd95bcb348db0cf50d6df93cb7cc5083fa4abe9beefd56cd1c36");
  SafeTensors st = load_safetensors(kFixture);
  EXPECT_EQ(st.metadata, (std::map<std::string, std::string>{{"producer", "make_io_fixtures.py"}}));
  EXPECT_EQ(st.tensors.size(), 12u);

  const Tensor& f32 = st.at("f32");
  EXPECT_EQ(f32.dtype(), DType::kFloat32);
  EXPECT_EQ(f32.shape(), (Shape{2, 3}));
  EXPECT_EQ(f32.to_vector<float>(), (std::vector<float>{-1.0f, -0.5f, 0.0f, 0.5f, 1.0f, 1.5f}));

  EXPECT_EQ(st.at("f64").to_vector<double>(), (std::vector<double>{1.0 / 3.0, -2.5, 1e300}));

  const Tensor& f16 = st.at("f16");
  EXPECT_EQ(f16.dtype(), DType::kFloat16);
  // 0.5, -1.5, 65504 (max normal), 2^-24 (smallest subnormal), +inf
  EXPECT_EQ(bits16(f16), (std::vector<uint16_t>{0x3800, 0xbe00, 0x7bff, 0x0001, 0x7c00}));

  const Tensor& bf16 = st.at("bf16");
  EXPECT_EQ(bf16.dtype(), DType::kBFloat16);
  EXPECT_EQ(bf16.shape(), (Shape{2, 2}));
  // 1.0, -2.0, 3.140625, 2^100
  EXPECT_EQ(bits16(bf16), (std::vector<uint16_t>{0x3f80, 0xc000, 0x4049, 0x7180}));

  EXPECT_EQ(st.at("i64").to_vector<int64_t>(),
            (std::vector<int64_t>{-(int64_t{1} << 62), 0, (int64_t{1} << 62) + 1}));
  EXPECT_EQ(st.at("i32").shape(), (Shape{2, 2}));
  EXPECT_EQ(st.at("i32").to_vector<int32_t>(),
            (std::vector<int32_t>{-1, std::numeric_limits<int32_t>::max(),
                                  std::numeric_limits<int32_t>::min(), 7}));
  EXPECT_EQ(st.at("i8").to_vector<int8_t>(), (std::vector<int8_t>{-128, -1, 0, 127}));
  EXPECT_EQ(st.at("u8").to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200, 255}));
  EXPECT_EQ(st.at("flag").dtype(), DType::kBool);
  EXPECT_EQ(st.at("flag").to_bytes(), (std::vector<uint8_t>{1, 0, 0, 1, 1}));
  EXPECT_EQ(st.at("scalar").shape(), Shape{});
  EXPECT_EQ(st.at("scalar").item<float>(), 42.0f);
  EXPECT_EQ(st.at("empty").shape(), (Shape{0, 3}));
  EXPECT_EQ(st.at("a.b/c").shape(), (Shape{1, 1, 1}));
  EXPECT_EQ(st.at("a.b/c").item<float>(), 7.0f);
}

TEST(SafeTensorsFixture, SporeWritesTheReferenceBytes) {
  SafeTensors st = load_safetensors(kFixture);
  std::vector<std::pair<std::string, Tensor>> tensors(st.tensors.begin(), st.tensors.end());
  EXPECT_EQ(safetensors_to_bytes(tensors, st.metadata), read_file_bytes(kFixture));
}

TEST(SafeTensorsFixture, LazyIndexMatchesTheHeader) {
  SafeTensorsFile f(kFixture);
  EXPECT_EQ(f.data_offset(), 8u + 768u);
  const SafeTensorInfo& i64 = f.info("i64");
  EXPECT_EQ(i64.begin, 0u);
  EXPECT_EQ(i64.end, 24u);
  EXPECT_EQ(f.info("flag").end, f.file_size() - f.data_offset());
  EXPECT_EQ(f.load("u8").to_vector<uint8_t>(), (std::vector<uint8_t>{0, 1, 200, 255}));
}

}  // namespace
}  // namespace spore
