// GgufWriter (NOTE [GGUF writer]): byte-for-byte against a file written by llama.cpp's gguf-py
// (tests/fixtures/gguf_writer/reference.gguf, tools/make_gguf_writer_fixture.py), round trips
// through GgufFile, and typed errors for what cannot be written.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "io_test_util.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"
#include "spore/half.h"
#include "test_util.h"

namespace spore {
namespace {

using test::expect_error;
namespace fs = std::filesystem;

const fs::path kReference = fs::path(SPORE_SOURCE_DIR) / "tests/fixtures/gguf_writer/reference.gguf";

template <class T>
std::vector<uint8_t> as_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// The same keys and tensors as tools/make_gguf_writer_fixture.py, in the same order.
GgufWriter reference_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_alignment(64);
  w.set("t.u8", gguf_uint(GgufType::kUInt8, 200));
  w.set("t.i8", gguf_int(GgufType::kInt8, -100));
  w.set("t.u16", gguf_uint(GgufType::kUInt16, 60000));
  w.set("t.i16", gguf_int(GgufType::kInt16, -30000));
  w.set_u32("t.u32", 4000000000u);
  w.set_i32("t.i32", -2000000000);
  w.set_f32("t.f32", 0.1f);
  w.set_bool("t.bool", true);
  w.set_string("t.string", "h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD");
  w.set_u64("t.u64", (uint64_t(1) << 63) + 5);
  w.set("t.i64", gguf_int(GgufType::kInt64, -(int64_t(1) << 62)));
  w.set("t.f64", gguf_float(GgufType::kFloat64, 1e-300));
  w.set("t.strings", gguf_strings({"a", "", "<|im_end|>"}));
  w.set("t.i32s", gguf_int32s({1, -2, 3}));
  w.set("t.f32s", gguf_float32s({0.5f, -1.25f}));
  w.set("t.bools", gguf_array(GgufType::kBool, {gguf_bool(true), gguf_bool(false)}));
  std::vector<float> a(15);
  for (int i = 0; i < 15; ++i) a[i] = (float)i * 0.25f - 1.f;
  w.add_tensor("a.f32", GgmlType::kF32, {5, 3}, as_bytes(a));
  std::vector<uint16_t> b(7);
  for (int i = 0; i < 7; ++i) b[i] = float_to_half_bits((float)i * 0.25f - 1.f);
  w.add_tensor("b.f16", GgmlType::kF16, {7}, as_bytes(b));
  // The q8_0 blocks as gguf-py quantised them (the quantiser is compared in the convert tests).
  const GgufFile ref(kReference);
  const auto q = ref.tensor_bytes("c.q8_0");
  w.add_tensor("c.q8_0", GgmlType::kQ8_0, {32, 2}, std::vector<uint8_t>(q.begin(), q.end()));
  return w;
}

TEST(GgufWriter, WritesTheSameBytesAsGgufPy) {
  const std::vector<uint8_t> want = read_file_bytes(kReference);
  const std::vector<uint8_t> got = reference_writer().to_bytes();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << "first difference at byte " << i;
}

TEST(GgufWriter, RoundTripsThroughTheReader) {
  test::TempDir dir;
  const fs::path path = dir / "m.gguf";
  reference_writer().write(path);
  EXPECT_EQ(dir.list(), std::vector<std::string>{"m.gguf"});  // no temporary left behind
  const GgufFile g(path);
  EXPECT_EQ(g.version(), 3u);
  EXPECT_EQ(g.alignment(), 64u);
  EXPECT_EQ(g.data_offset() % 64, 0u);
  EXPECT_EQ(g.get_int("t.u8"), 200);
  EXPECT_EQ(g.get_int("t.i8"), -100);
  EXPECT_EQ(g.get_int("t.u16"), 60000);
  EXPECT_EQ(g.get_int("t.i16"), -30000);
  EXPECT_EQ(g.get_int("t.u32"), 4000000000LL);
  EXPECT_EQ(g.get_int("t.i32"), -2000000000);
  EXPECT_EQ(g.get_float("t.f32"), (double)0.1f);
  EXPECT_TRUE(g.get_bool("t.bool"));
  EXPECT_EQ(g.get_string("t.string"), "h\xC3\xA9llo \xE4\xBD\xA0\xE5\xA5\xBD");
  EXPECT_EQ(std::get<uint64_t>(g.at("t.u64").value), (uint64_t(1) << 63) + 5);
  EXPECT_EQ(g.get_int("t.i64"), -(int64_t(1) << 62));
  EXPECT_EQ(g.get_float("t.f64"), 1e-300);
  EXPECT_EQ(g.get_strings("t.strings"), (std::vector<std::string>{"a", "", "<|im_end|>"}));
  EXPECT_EQ(g.get_ints("t.i32s"), (std::vector<int64_t>{1, -2, 3}));
  EXPECT_EQ(g.get_floats("t.f32s"), (std::vector<double>{0.5, -1.25}));
  ASSERT_EQ(g.tensors().size(), 3u);
  const Tensor a = g.tensor("a.f32");
  EXPECT_EQ(a.shape(), Shape({3, 5}));
  EXPECT_EQ(a.to_vector<float>()[14], 14 * 0.25f - 1.f);
  EXPECT_EQ(g.tensor_info("b.f16").offset, 64u);   // 60 bytes of a.f32, padded
  EXPECT_EQ(g.tensor_info("c.q8_0").offset, 128u);  // 14 bytes of b.f16, padded
  EXPECT_EQ(g.tensor_info("c.q8_0").nbytes, 68u);
}

TEST(GgufWriter, StreamsTensorsFromProducers) {
  GgufWriter w;
  w.set_string("general.architecture", "x");
  w.add_tensor("p", GgmlType::kF32, {3}, [](FileSink& s) {
    const float v[3] = {1, 2, 3};
    s.write(v, sizeof v);
  });
  const GgufFile g = GgufFile::from_bytes(w.to_bytes());
  EXPECT_EQ(g.tensor("p").to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(g.alignment(), 32u);
  EXPECT_FALSE(g.contains("general.alignment"));
}

TEST(GgufWriter, RefusesWhatItCannotWrite) {
  GgufWriter w;
  w.set_u32("k", 1);
  expect_error([&] { w.set_u32("k", 2); }, ErrorCode::kValue, "'k'", "already set");
  expect_error([&] { w.set("u", gguf_uint(GgufType::kUInt8, 300)); }, ErrorCode::kValue, "'u'", "300", "uint8");
  expect_error([&] { w.set("i", gguf_int(GgufType::kInt16, -40000)); }, ErrorCode::kValue, "'i'", "int16");
  expect_error([&] { w.set("m", gguf_array(GgufType::kInt32, {gguf_string("x")})); }, ErrorCode::kValue, "'m'");
  expect_error([&] { w.set_u32("general.alignment", 48); }, ErrorCode::kValue, "power of two");
  expect_error([&] { w.add_tensor("q", GgmlType::kQ4_0, {48, 2}, std::vector<uint8_t>(54)); }, ErrorCode::kValue,
               "'q'", "block size 32");
  expect_error([&] { w.add_tensor("f", GgmlType::kF32, {4}, std::vector<uint8_t>(12)); }, ErrorCode::kValue,
               "'f'", "16 bytes");
  expect_error([&] { w.add_tensor("d", GgmlType::kF32, {1, 1, 1, 1, 1}, std::vector<uint8_t>(4)); },
               ErrorCode::kValue, "'d'", "at most 4");
  w.add_tensor("t", GgmlType::kF32, {2}, std::vector<uint8_t>(8));
  expect_error([&] { w.add_tensor("t", GgmlType::kF32, {2}, std::vector<uint8_t>(8)); }, ErrorCode::kValue,
               "'t'", "twice");
  expect_error([&] { w.set_alignment(64); }, ErrorCode::kValue, "before the first tensor");
}

TEST(GgufWriter, AProducerOfTheWrongSizeLeavesNoFile) {
  test::TempDir dir;
  GgufWriter w;
  w.add_tensor("short", GgmlType::kF32, {4}, [](FileSink& s) { s.write(std::string_view("abcd")); });
  expect_error([&] { w.write(dir / "m.gguf"); }, ErrorCode::kInternal, "'short'", "4 bytes", "16");
  EXPECT_TRUE(dir.list().empty());
}

}  // namespace
}  // namespace spore
