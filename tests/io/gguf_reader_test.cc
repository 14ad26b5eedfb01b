// The GGUF reader: metadata of every type, tensor infos and zero-copy data, the real Llama 2
// vocabulary file, and hostile files (each a typed error naming the problem).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/gguf_test_writer.h"
#include "spore/error.h"
#include "test_util.h"
#include "spore/gguf.h"

namespace {

using spore::ErrorCode;
using spore::GgufFile;
using spore::GgufType;
using spore::testing::GgufWriter;

using spore::test::expect_error;  // the suite's one (tests/test_util.h)

std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(GgufReader, MetadataOfEveryTypeAndTensors) {
  GgufWriter w;
  w.add_string("general.architecture", "llama");
  w.add_u32("llama.context_length", 4096);
  w.add_i32("neg", -7);
  w.add_f32("llama.rope.freq_base", 10000.5f);
  w.add_bool("flag", true);
  w.add_u64("big", 1ull << 40);
  w.add_strings("names", {"a", "", "\xE2\x96\x81x"});
  w.add_f32s("scores", {0.5f, -1.25f});
  w.add_i32s("types", {1, 3, 6});
  w.add_tensor("w", 0, {3, 2}, float_bytes({1, 2, 3, 4, 5, 6}));
  w.add_tensor("q", 8, {64}, std::vector<uint8_t>(68, 7));  // Q8_0: 2 blocks of 34 bytes
  const GgufFile g = GgufFile::from_bytes(w.bytes(), "test");
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_EQ(g.get_string("general.architecture"), "llama");
  EXPECT_EQ(g.get_int("llama.context_length"), 4096);
  EXPECT_EQ(g.get_int("neg"), -7);
  EXPECT_EQ(g.get_float("llama.rope.freq_base"), 10000.5);
  EXPECT_TRUE(g.get_bool("flag"));
  EXPECT_EQ(g.get_int("big"), 1ll << 40);
  EXPECT_EQ(g.get_strings("names"), (std::vector<std::string>{"a", "", "\xE2\x96\x81x"}));
  EXPECT_EQ(g.get_floats("scores"), (std::vector<double>{0.5, -1.25}));
  EXPECT_EQ(g.get_ints("types"), (std::vector<int64_t>{1, 3, 6}));
  EXPECT_EQ(g.at("types").element_type, GgufType::kInt32);
  ASSERT_EQ(g.tensors().size(), 2u);
  const auto& wi = g.tensor_info("w");
  EXPECT_EQ(wi.dims, (std::vector<uint64_t>{3, 2}));
  EXPECT_EQ(wi.nbytes, 24u);
  spore::Tensor t = g.tensor("w");
  EXPECT_EQ(t.shape(), spore::Shape({2, 3}));  // row-major: ne reversed
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(g.tensor_info("q").nbytes, 68u);
  EXPECT_EQ(g.tensor("q").numel(), 68);
  EXPECT_EQ(g.tensor_bytes("q")[67], 7);
  EXPECT_EQ(g.tensor_bytes("w").data() - g.tensor_bytes("q").data(), -32);  // aligned, in place
  expect_error([&] { g.get_string("llama.context_length"); }, ErrorCode::kFormat, "must be a string, not uint32");
  expect_error([&] { g.get_int("missing.key"); }, ErrorCode::kFormat, "no metadata 'missing.key'");
  expect_error([&] { g.tensor("nope"); }, ErrorCode::kIndex, "no tensor 'nope'");
}

TEST(GgufReader, MappedFileIsZeroCopyAndOutlivesTheReader) {
  GgufWriter w;
  w.set_alignment(64);
  w.add_tensor("x", 0, {4}, float_bytes({1.5f, 2.5f, 3.5f, 4.5f}));
  const auto path = std::filesystem::temp_directory_path() / "spore_gguf_reader_test.gguf";
  {
    const auto b = w.bytes();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
  }
  spore::Tensor t;
  {
    GgufFile g(path);
    EXPECT_EQ(g.alignment(), 64u);
    EXPECT_EQ(g.data_offset() % 64, 0u);
    t = g.tensor("x");
  }
  std::filesystem::remove(path);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1.5f, 2.5f, 3.5f, 4.5f}));
}

TEST(GgufReader, RealLlama2Vocabulary) {
  GgufFile g(std::string(SPORE_SOURCE_DIR) +
             "/tests/fixtures/tokenizers/llama2-gguf/ggml-vocab-llama-spm.gguf");
  EXPECT_EQ(g.get_string("tokenizer.ggml.model"), "llama");
  const auto tokens = g.get_strings("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 32000u);
  EXPECT_EQ(tokens[15043], "\xE2\x96\x81Hello");
  EXPECT_EQ(g.get_floats("tokenizer.ggml.scores").size(), 32000u);
  EXPECT_EQ(g.get_ints("tokenizer.ggml.token_type")[1], 3);  // <s>: control
  EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id"), 1);
}

TEST(GgufReader, HostileFilesGetTypedErrors) {
  GgufWriter w;
  w.add_strings("tokenizer.ggml.tokens", {"a", "b"});
  w.add_tensor("x", 0, {4}, float_bytes({1, 2, 3, 4}));
  const std::vector<uint8_t> good = w.bytes();
  auto load = [](std::vector<uint8_t> b) { return GgufFile::from_bytes(b, "bad.gguf"); };
  expect_error([&] { load({}); }, ErrorCode::kFormat, "the magic");
  expect_error([&] { load({'G', 'G', 'M', 'L', 3, 0, 0, 0}); }, ErrorCode::kFormat, "magic 'GGUF'");
  auto v1 = good;
  v1[4] = 1;
  expect_error([&] { load(v1); }, ErrorCode::kVersion, "version 1");
  auto v9 = good;
  v9[4] = 9;
  expect_error([&] { load(v9); }, ErrorCode::kVersion, "version 9");
  // Every truncation (header, padding or data) is refused with kFormat, never a crash.
  for (size_t n = 0; n < good.size(); ++n) {
    try {
      load(std::vector<uint8_t>(good.begin(), good.begin() + n));
      ADD_FAILURE() << "truncated to " << n << " bytes was accepted";
    } catch (const spore::Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kFormat) << e.what();
    }
  }
  // A huge array count: refused before any allocation.
  auto huge = good;
  const size_t count_at = 4 + 4 + 8 + 8 + 8 + 21 + 4 + 4;  // after key "tokenizer.ggml.tokens", type, element type
  std::memset(&huge[count_at], 0xFF, 7);
  expect_error([&] { load(huge); }, ErrorCode::kFormat, "claims");
  // Unknown value type.
  auto badtype = good;
  badtype[4 + 4 + 8 + 8 + 8 + 21] = 77;
  expect_error([&] { load(badtype); }, ErrorCode::kFormat, "unknown value type 77");
  // Tensor data past the end of the file.
  const std::vector<uint8_t> cut(good.begin(), good.end() - 4);
  expect_error([&] { load(cut); }, ErrorCode::kFormat, "tensor 'x' needs bytes");
  // Bad alignment, misaligned offset, too many dims, unknown ggml type, duplicate key.
  GgufWriter a;
  a.add_u32("general.alignment", 3);
  expect_error([&] { load(a.bytes()); }, ErrorCode::kFormat, "power of two");
  GgufWriter d;
  d.add_tensor("t", 0, {1, 1, 1, 1, 1}, float_bytes({1}));
  expect_error([&] { load(d.bytes()); }, ErrorCode::kFormat, "5 dimensions");
  GgufWriter u;
  u.add_tensor("t", 99, {1}, float_bytes({1}));
  expect_error([&] { load(u.bytes()); }, ErrorCode::kFormat, "unknown ggml type 99");
  GgufWriter q;
  q.add_tensor("t", 2, {33}, std::vector<uint8_t>(36));
  expect_error([&] { load(q.bytes()); }, ErrorCode::kFormat, "block size 32");
  GgufWriter dup;
  dup.add_u32("k", 1);
  dup.add_u32("k", 2);
  expect_error([&] { load(dup.bytes()); }, ErrorCode::kFormat, "appears twice");
  GgufWriter ov;
  ov.add_tensor("t", 0, {1ull << 40, 1ull << 40}, {});
  expect_error([&] { load(ov.bytes()); }, ErrorCode::kFormat, "overflows");
}

}  // namespace
