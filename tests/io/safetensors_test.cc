// safetensors: round trips for every dtype, views, metadata, the writer's layout, the lazy reader,
// and the strict validator (every malformed header is a kFormat error naming file and tensor).
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "io/io_test_util.h"
#include "spore/format.h"
#include "test_util.h"

namespace spore {
namespace {

using test::expect_error;
using test::TempDir;

// Bytes of `values` in `dtype`'s layout, converted on the host by the test itself.
std::vector<uint8_t> host_bytes(const std::vector<double>& values, DType dtype) {
  std::vector<uint8_t> out(values.size() * dtype_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t* p = out.data() + i * dtype_size(dtype);
    double v = values[i];
    visit_dtype(dtype, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_same_v<T, bool>)
        *p = v != 0 ? 1 : 0;
      else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        T h((float)v);
        std::memcpy(p, &h.bits, 2);
      } else if constexpr (std::is_integral_v<T>) {
        // Through int64: a negative value into an unsigned type wraps (defined), where a direct
        // double -> unsigned conversion of it is undefined (clang's UBSan reports it).
        T x = static_cast<T>(static_cast<int64_t>(v));
        std::memcpy(p, &x, sizeof x);
      } else {
        T x = (T)v;
        std::memcpy(p, &x, sizeof x);
      }
    });
  }
  return out;
}

Tensor tensor_of(const std::vector<uint8_t>& bytes, const Shape& shape, DType dtype) {
  return Tensor::from_bytes(bytes.data(), shape, dtype, Device::cpu());
}

// A file from a literal header and buffer: 8-byte little-endian length, header, buffer.
std::string raw_file(const std::string& header, const std::string& buffer = "") {
  uint64_t n = header.size();
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + buffer;
}

SafeTensors load_raw(const std::string& file) {
  return load_safetensors_bytes(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(file.data()), file.size()),
      "bad.safetensors");
}

void expect_format_error(const std::string& file, const std::vector<std::string>& parts,
                         ErrorCode code = ErrorCode::kFormat) {
  std::vector<std::string> all = parts;
  all.push_back("bad.safetensors");
  expect_error([&] { load_raw(file); }, code, all);
}

TEST(SafeTensors, RoundTripEveryDType) {
  TempDir dir;
  const std::vector<Shape> shapes = {Shape{}, Shape{0}, Shape{7}, Shape{2, 3, 4}, Shape{3, 0, 2}};
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::map<std::string, std::vector<uint8_t>> expect;
  uint32_t seed = 1;
  for (DType dt : kAllDTypes)
    for (size_t s = 0; s < shapes.size(); ++s) {
      std::string name = std::string(dtype_name(dt)) + "_" + std::to_string(s);
      auto values = test::random_values(shapes[s].numel(), dt, -100, 100, seed++);
      auto bytes = host_bytes(values, dt);
      tensors.emplace_back(name, tensor_of(bytes, shapes[s], dt));
      expect[name] = bytes;
    }
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "ünïcode ✓"}};
  save_safetensors(dir / "all.safetensors", tensors, meta);

  SafeTensors back = load_safetensors(dir / "all.safetensors");
  EXPECT_EQ(back.metadata, meta);
  ASSERT_EQ(back.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(back.contains(name));
    const Tensor& got = back.at(name);
    EXPECT_EQ(got.dtype(), t.dtype());
    EXPECT_EQ(got.shape(), t.shape());
    EXPECT_EQ(got.to_bytes(), expect[name]);
  }
  // The file's bytes are what safetensors_to_bytes produces, and loading from memory agrees.
  std::vector<uint8_t> file = read_file_bytes(dir / "all.safetensors");
  EXPECT_EQ(file, safetensors_to_bytes(tensors, meta));
  SafeTensors mem = load_safetensors_bytes(file, "all");
  for (const auto& [name, t] : tensors) EXPECT_EQ(mem.at(name).to_bytes(), expect[name]) << name;
}

TEST(SafeTensors, NonContiguousViewsAreWrittenRowMajor) {
  TempDir dir;
  Tensor base = Tensor::from_vector<float>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  // Transpose [3, 2] with strides [1, 3], and a slice starting at element 2.
  Tensor tr = Tensor::view_of(base.storage(), 0, Shape{3, 2}, Shape{1, 3}, DType::kFloat32);
  Tensor sl = Tensor::view_of(base.storage(), 2, Shape{2}, Shape{3}, DType::kFloat32);
  save_safetensors(dir / "v.safetensors", {{"tr", tr}, {"sl", sl}});
  SafeTensors back = load_safetensors(dir / "v.safetensors");
  EXPECT_EQ(back.at("tr").shape(), (Shape{3, 2}));
  EXPECT_EQ(back.at("tr").to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(back.at("sl").to_vector<float>(), (std::vector<float>{2, 5}));
}

TEST(SafeTensors, WriterLayoutIsAlignedAndSorted) {
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z_u8", tensor_of({1, 2, 3}, Shape{3}, DType::kUInt8)},
      {"a_f64", Tensor::from_vector<double>({1.5, 2.5}, Shape{2})},
      {"m_f16", Tensor::from_vector<Half>({Half(1.0f)}, Shape{1})},
      {"b_f64", Tensor::from_vector<double>({3.5}, Shape{1})},
      {"k_i32", Tensor::from_vector<int32_t>({-4}, Shape{1})},
  };
  std::vector<uint8_t> bytes = safetensors_to_bytes(tensors, {{"k", "v"}});
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u) << "the data buffer must start 8-byte aligned";
  std::string header(reinterpret_cast<const char*>(bytes.data() + 8), n);
  // __metadata__ first, then data order: widest dtype first, names ascending within a dtype.
  EXPECT_EQ(header.rfind("{\"__metadata__\":{\"k\":\"v\"},\"a_f64\":", 0), 0u) << header;
  size_t a = header.find("a_f64"), b = header.find("b_f64"), k = header.find("k_i32"),
         m = header.find("m_f16"), z = header.find("z_u8");
  EXPECT_TRUE(a < b && b < k && k < m && m < z) << header;
  size_t last = header.find_last_not_of(' ');
  EXPECT_EQ(header[last], '}');
  EXPECT_LT(header.size() - last - 1, 8u) << "padding is spaces, fewer than 8";
  // Each tensor is aligned to its element size inside the buffer.
  SafeTensors back = load_safetensors_bytes(bytes);
  EXPECT_EQ(back.at("b_f64").to_vector<double>(), std::vector<double>{3.5});
  TempDir dir;
  atomic_write_file(dir / "l.safetensors", bytes);
  SafeTensorsFile f(dir / "l.safetensors");
  EXPECT_EQ(f.data_offset() % 8, 0u);
  for (const SafeTensorInfo& ti : f.tensors())
    EXPECT_EQ(ti.begin % dtype_size(ti.dtype), 0u) << ti.name;
  EXPECT_EQ(f.info("a_f64").begin, 0u);
  EXPECT_EQ(f.info("z_u8").end, f.file_size() - f.data_offset());
}

TEST(SafeTensors, FromMapAndEmptyFile) {
  TempDir dir;
  std::map<std::string, Tensor, std::less<>> m = {
      {"x", Tensor::from_vector<int64_t>({1, 2, 3}, Shape{3})}};
  save_safetensors(dir / "m.safetensors", {m.begin(), m.end()});
  EXPECT_EQ(load_safetensors(dir / "m.safetensors").at("x").to_vector<int64_t>(),
            (std::vector<int64_t>{1, 2, 3}));
  save_safetensors(dir / "e.safetensors", std::vector<std::pair<std::string, Tensor>>{});
  SafeTensors e = load_safetensors(dir / "e.safetensors");
  EXPECT_TRUE(e.tensors.empty());
  EXPECT_TRUE(e.metadata.empty());
  EXPECT_EQ(std::filesystem::file_size(dir / "e.safetensors"), 16u);  // length + "{}" + 6 spaces
}

TEST(SafeTensors, WriterRejectsBadNames) {
  Tensor t = Tensor::from_vector<float>({1}, Shape{1});
  expect_error(
      [&] {
        safetensors_to_bytes({{"a", t}, {"a", t}});
      },
      ErrorCode::kValue, {"'a'", "twice"});
  expect_error(
      [&] {
        safetensors_to_bytes({{"__metadata__", t}});
      },
      ErrorCode::kValue, {"__metadata__"});
  expect_error(
      [&] {
        safetensors_to_bytes({{"u", Tensor()}});
      },
      ErrorCode::kValue, {"'u'", "undefined"});
  expect_error(
      [&] {
        safetensors_to_bytes({{std::string("bad\xff"), t}});
      },
      ErrorCode::kValue, {"UTF-8"});
  expect_error(
      [&] {
        safetensors_to_bytes({{"ok", t}}, {{"k", std::string("\xc3")}});
      },
      ErrorCode::kValue, {"UTF-8"});
}

TEST(SafeTensors, LazyFileLoadsOnDemand) {
  TempDir dir;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (int i = 0; i < 6; ++i) {
    std::vector<float> v(1000 + i);
    for (size_t j = 0; j < v.size(); ++j) v[j] = (float)(i * 10000 + (int)j);
    tensors.emplace_back("layer." + std::to_string(i) + ".weight",
                         Tensor::from_vector(v, Shape{(int64_t)v.size()}));
  }
  save_safetensors(dir / "lazy.safetensors", tensors, {{"arch", "test"}});
  SafeTensorsFile f(dir / "lazy.safetensors");
  EXPECT_EQ(f.path(), dir / "lazy.safetensors");
  EXPECT_EQ(f.metadata().at("arch"), "test");
  ASSERT_EQ(f.tensors().size(), 6u);
  for (size_t i = 1; i < f.tensors().size(); ++i)
    EXPECT_LT(f.tensors()[i - 1].name, f.tensors()[i].name);
  EXPECT_TRUE(f.contains("layer.3.weight"));
  EXPECT_FALSE(f.contains("layer.9.weight"));
  EXPECT_EQ(f.info("layer.2.weight").shape, (Shape{1002}));
  expect_error([&] { f.load("layer.9.weight"); }, ErrorCode::kIndex,
               {"lazy.safetensors", "layer.9.weight", "layer.0.weight"});

  // A copy shares the open file; several threads load at once.
  SafeTensorsFile copy = f;
  std::vector<std::thread> threads;
  std::vector<int> ok(6, 0);
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] {
      Tensor t = copy.load("layer." + std::to_string(i) + ".weight");
      ok[i] = t.to_bytes() == tensors[i].second.to_bytes();
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, std::vector<int>(6, 1));

  // The file shrinks after the header was read: the load fails cleanly.
  std::filesystem::resize_file(dir / "lazy.safetensors", f.data_offset() + 100);
  bool failed = false;
  for (const auto& ti : f.tensors()) {
    try {
      f.load(ti.name);
    } catch (const Error& e) {
      failed = true;
      EXPECT_EQ(e.code(), ErrorCode::kIO) << e.what();
      EXPECT_NE(std::string(e.what()).find("shrank"), std::string::npos) << e.what();
    }
  }
  EXPECT_TRUE(failed);
  // Opened afresh, the truncated file is a format error naming a tensor past the end.
  expect_error([&] { load_safetensors(dir / "lazy.safetensors"); }, ErrorCode::kFormat,
               {"lazy.safetensors", "data_offsets", "truncated"});
}

TEST(SafeTensors, FileErrors) {
  TempDir dir;
  expect_error([&] { SafeTensorsFile f(dir / "missing.safetensors"); }, ErrorCode::kIO,
               {"missing.safetensors", "No such file"});
  expect_error([&] { load_safetensors(dir.path()); }, ErrorCode::kIO, {dir.path().string()});
  test::write_raw(dir / "tiny.safetensors", "abc");
  expect_error([&] { load_safetensors(dir / "tiny.safetensors"); }, ErrorCode::kFormat,
               {"tiny.safetensors", "3 bytes"});
  SafeTensors none;
  expect_error([&] { none.at("w"); }, ErrorCode::kIndex, {"'w'"});
}

// ---- the validator ------------------------------------------------------------------------------
const std::string kF32x2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";

TEST(SafeTensorsValidator, LengthPrefix) {
  expect_format_error("\x01\x02", {"2 bytes"});
  std::string f = raw_file("{}");
  uint64_t n = 1000;
  std::memcpy(f.data(), &n, 8);
  expect_format_error(f, {"header length 1000", "past the end"});
  n = ~0ull;
  std::memcpy(f.data(), &n, 8);
  expect_format_error(f, {"header length 18446744073709551615"});
  expect_format_error(raw_file(" "), {"too short"});
}

TEST(SafeTensorsValidator, HeaderJson) {
  expect_format_error(raw_file("[1, 2]  "), {"does not start with '{'"});
  expect_format_error(raw_file(R"({"a": {"dtype": "F32",)"), {"not valid JSON"});
  expect_format_error(raw_file("{\"a\xff\": 1}"), {"not valid JSON"});
  expect_format_error(raw_file(R"({"a": 5})"), {"tensor 'a'", "must be an object"});
  expect_format_error(raw_file(R"({"a":[[[[[[[[[[[[[1]]]]]]]]]]]]})"), {"nests deeper"});
  expect_format_error(raw_file(R"({"a":)" + kF32x2 + R"(,"a":)" + kF32x2 + "}", std::string(8, 0)),
                      {"tensor name 'a' appears twice"});
  expect_format_error(
      raw_file(R"({"w":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
               std::string(8, 0)),
      {"tensor 'w'", "'dtype' appears twice"});
  expect_format_error(raw_file(R"({"w":{"shape":[2],"data_offsets":[0,8]}})"),
                      {"tensor 'w'", "no \"dtype\""});
  expect_format_error(raw_file(R"({"w":{"dtype":"F32","shape":[2]}})"),
                      {"tensor 'w'", "no \"data_offsets\""});
  expect_format_error(raw_file(R"({"__metadata__":[1]})"), {"__metadata__"});
  expect_format_error(raw_file(R"({"__metadata__":{"k":1}})"), {"__metadata__", "'k'", "string"});
  // Trailing spaces (the writer's padding) are fine; trailing other bytes are not.
  EXPECT_TRUE(load_raw(raw_file("{}      ")).tensors.empty());
  expect_format_error(raw_file("{} x"), {"not valid JSON"});
}

TEST(SafeTensorsValidator, DTypes) {
  expect_format_error(raw_file(R"({"w":{"dtype":"Q7","shape":[],"data_offsets":[0,0]}})"),
                      {"tensor 'w'", "unknown dtype code \"Q7\"", "F32"});
  expect_format_error(raw_file(R"({"w":{"dtype":7,"shape":[],"data_offsets":[0,0]}})"),
                      {"tensor 'w'", "\"dtype\" must be a string"});
  for (const char* code : {"I16", "U16", "U32", "U64", "F8_E4M3", "F8_E5M2"})
    expect_format_error(raw_file(std::string(R"({"w":{"dtype":")") + code +
                                 R"(","shape":[1],"data_offsets":[0,2]}})"),
                        {"tensor 'w'", code, "not supported"}, ErrorCode::kDType);
}

TEST(SafeTensorsValidator, Shapes) {
  auto with_shape = [](const std::string& shape, const std::string& offsets = "[0,0]") {
    return raw_file(R"({"w":{"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets +
                    "}}");
  };
  expect_format_error(with_shape("[-1]"), {"tensor 'w'", "not a non-negative integer"});
  expect_format_error(with_shape("[2.5]"), {"tensor 'w'", "not a non-negative integer"});
  expect_format_error(with_shape("[\"2\"]"), {"tensor 'w'", "not a non-negative integer"});
  expect_format_error(with_shape("5"), {"tensor 'w'", "\"shape\" must be an array"});
  expect_format_error(with_shape("[4294967296,4294967296,4]"), {"tensor 'w'", "64-bit"});
  expect_format_error(with_shape("[18446744073709551615]"), {"tensor 'w'", "64-bit"});
  expect_format_error(with_shape("[4611686018427387904]"), {"tensor 'w'", "64-bit"});  // x4 bytes
  expect_format_error(with_shape("[1,1,1,1,1,1,1,1,1]", "[0,4]"), {"tensor 'w'", "9 dimensions"},
                      ErrorCode::kUnsupported);
  // NOTE [Shape overflow]: a zero-sized dimension holds no bytes, but the other extents still
  // make strides, so they must multiply within int64.
  expect_format_error(with_shape("[0,4611686018427387904,4611686018427387904]"), {"tensor 'w'", "64-bit"});
  EXPECT_EQ(load_raw(with_shape("[0,1099511627776,4]")).at("w").numel(), 0);
}

TEST(SafeTensorsValidator, Offsets) {
  auto one = [](const std::string& offsets, size_t buffer) {
    return raw_file(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":)" + offsets + "}}",
                    std::string(buffer, '\0'));
  };
  expect_format_error(one("[0,100]", 8), {"tensor 'w'", "past the data buffer of 8 bytes"});
  expect_format_error(one("[8,0]", 8), {"tensor 'w'", "end before they begin"});
  expect_format_error(one("[0,4]", 4), {"tensor 'w'", "hold 4 bytes", "needs 8"});
  expect_format_error(one("[0,8,16]", 16), {"tensor 'w'", "two non-negative integers"});
  expect_format_error(one("[-8,0]", 8), {"tensor 'w'", "two non-negative integers"});
  expect_format_error(one("[0,8]", 12), {"cover 8 bytes", "12 bytes", "'w'"});
  auto two = [](const std::string& a, const std::string& b, size_t buffer) {
    return raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":)" + a +
                        R"(},"b":{"dtype":"F32","shape":[2],"data_offsets":)" + b + "}}",
                    std::string(buffer, '\0'));
  };
  expect_format_error(two("[0,8]", "[4,12]", 12), {"tensor 'b'", "overlap tensor 'a'"});
  expect_format_error(two("[0,8]", "[0,8]", 8), {"overlap"});
  expect_format_error(two("[0,8]", "[12,20]", 20), {"tensor 'b'", "gap of 4 bytes", "'a'"});
  expect_format_error(two("[4,12]", "[12,20]", 20), {"tensor 'a'", "gap of 4", "buffer start"});
  SafeTensors ok = load_raw(two("[8,16]", "[0,8]", 16));  // any order in the header
  EXPECT_EQ(ok.tensors.size(), 2u);
}

TEST(SafeTensorsValidator, BoolBytesMustBeZeroOrOne) {
  std::string f = raw_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                           std::string("\x01\x00\x02", 3));
  expect_format_error(f, {"tensor 'm'", "element 2", "byte 2"});
  TempDir dir;
  test::write_raw(dir / "b.safetensors", f);
  expect_error([&] { load_safetensors(dir / "b.safetensors"); }, ErrorCode::kFormat,
               {"b.safetensors", "tensor 'm'"});
  std::string good = raw_file(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})",
                              std::string("\x01\x00\x01", 3));
  EXPECT_EQ(load_raw(good).at("m").to_bytes(), (std::vector<uint8_t>{1, 0, 1}));
}

}  // namespace
}  // namespace spore
