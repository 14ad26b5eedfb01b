// .npy reading (fixtures written by NumPy, tools/make_data_fixtures.py), writing, NumpySource,
// and the refusal of truncated, corrupt and unsupported files.
#include <cmath>
#include <cstring>
#include <random>

#include "data_test_util.h"

namespace spore::data::test {
namespace {

// The fixture formula: element i = (i * 7 % 23 - 11) * scale (+11 for unsigned), bool i % 3 == 0.
double fixture_value(int64_t i, DType dt) {
  if (dt == DType::kBool) return i % 3 == 0 ? 1 : 0;
  double v = (double)(i * 7 % 23 - 11);
  if (is_floating(dt)) v *= 0.25;
  if (dt == DType::kUInt8) v += 11;
  return v;
}

// Element values of a tensor as doubles, read from its bytes (no cast kernel involved).
std::vector<double> values_of(const Tensor& t) {
  std::vector<uint8_t> bytes = t.to_bytes();
  std::vector<double> out((size_t)t.numel());
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < out.size(); ++i) {
      T v;
      std::memcpy(&v, bytes.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        out[i] = (float)v;
      else
        out[i] = (double)v;
    }
  });
  return out;
}

TEST(DataNpy, LoadsEveryDtypeWrittenByNumpy) {
  const std::pair<const char*, DType> files[] = {{"b1", DType::kBool},    {"i1", DType::kInt8},
                                                 {"u1", DType::kUInt8},   {"i4", DType::kInt32},
                                                 {"i8", DType::kInt64},   {"f2", DType::kFloat16},
                                                 {"f4", DType::kFloat32}, {"f8", DType::kFloat64}};
  for (const auto& [code, dt] : files) {
    Tensor t = load_npy(fixture(std::string(code) + "_2x3x4.npy"));
    EXPECT_EQ(t.dtype(), dt) << code;
    EXPECT_EQ(t.shape(), (Shape{2, 3, 4})) << code;
    std::vector<double> v = values_of(t);
    for (int64_t i = 0; i < 24; ++i)
      EXPECT_EQ(v[i], fixture_value(i, dt)) << code << " element " << i;
  }
}

TEST(DataNpy, BigEndianAndLaterFormatVersions) {
  for (const char* name : {"be_f4_2x3x4.npy", "v2_f4_2x3x4.npy", "v3_f4_2x3x4.npy"}) {
    Tensor t = load_npy(fixture(name));
    EXPECT_EQ(t.dtype(), DType::kFloat32) << name;
    EXPECT_EQ(t.shape(), (Shape{2, 3, 4})) << name;
    std::vector<double> v = values_of(t);
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(v[i], fixture_value(i, DType::kFloat32)) << name;
  }
  Tensor be = load_npy(fixture("be_i8_2x3x4.npy"));
  EXPECT_EQ(be.dtype(), DType::kInt64);
  std::vector<double> v = values_of(be);
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(v[i], fixture_value(i, DType::kInt64));
}

// int16 and uint16 load as int32 and uint32 as int64, every value kept (big-endian too).
TEST(DataNpy, NarrowerIntegersAreWidened) {
  const Tensor i2 = load_npy(fixture("i2_extremes.npy"));
  EXPECT_EQ(i2.dtype(), DType::kInt32);
  EXPECT_EQ(i2.to_vector<int32_t>(), (std::vector<int32_t>{-32768, -1, 0, 1, 32767}));
  const Tensor u2 = load_npy(fixture("be_u2_extremes.npy"));
  EXPECT_EQ(u2.dtype(), DType::kInt32);
  EXPECT_EQ(u2.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 65535, 40000}));
  const Tensor u4 = load_npy(fixture("u4_extremes.npy"));
  EXPECT_EQ(u4.dtype(), DType::kInt64);
  EXPECT_EQ(u4.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 4294967295LL, 3000000000LL}));
}

// save_npy_narrowed writes the bytes NumPy wrote for the same int16 and uint32 arrays, and the
// uint16 one reads back; out-of-range values and float tensors are typed errors.
TEST(DataNpy, NarrowedIntegersAreWrittenAsNumpyWritesThem) {
  ScratchDir dir;
  save_npy_narrowed(dir.path("i2.npy"), Tensor::from_vector<int32_t>({-32768, -1, 0, 1, 32767}), "int16");
  EXPECT_EQ(read_all(dir.path("i2.npy")), read_all(fixture("i2_extremes.npy")));
  save_npy_narrowed(dir.path("u4.npy"), Tensor::from_vector<int64_t>({0, 1, 4294967295LL, 3000000000LL}), "uint32");
  EXPECT_EQ(read_all(dir.path("u4.npy")), read_all(fixture("u4_extremes.npy")));
  save_npy_narrowed(dir.path("u2.npy"), Tensor::from_vector<int64_t>({0, 1, 65535, 40000}), "uint16");
  EXPECT_EQ(load_npy(dir.path("u2.npy")).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 65535, 40000}));
  test::expect_error([&] { save_npy_narrowed(dir.path("bad.npy"), Tensor::from_vector<int64_t>({65536}), "uint16"); },
                     ErrorCode::kValue, "65536", "uint16");
  test::expect_error([&] { save_npy_narrowed(dir.path("bad.npy"), Tensor::from_vector<int32_t>({-1}), "uint32"); },
                     ErrorCode::kValue, "-1");
  test::expect_error([&] { save_npy_narrowed(dir.path("bad.npy"), Tensor::from_vector<float>({1.0f}), "int16"); },
                     ErrorCode::kDType, "float32");
  test::expect_error([&] { save_npy_narrowed(dir.path("bad.npy"), Tensor::from_vector<int32_t>({1}), "int4"); },
                     ErrorCode::kValue, "int4");
  EXPECT_FALSE(std::filesystem::exists(dir.path("bad.npy")));
  for (const char* t : {"int16", "uint16", "uint32"}) EXPECT_TRUE(npy_has_narrow_type(t)) << t;
  for (const char* t : {"int4", "float8e4m3fn", ""}) EXPECT_FALSE(npy_has_narrow_type(t)) << t;
}

TEST(DataNpy, ScalarAndEmptyArrays) {
  Tensor s = load_npy(fixture("f8_scalar.npy"));
  EXPECT_EQ(s.ndim(), 0);
  EXPECT_EQ(s.item<double>(), 2.5);
  Tensor e = load_npy(fixture("f4_0x3.npy"));
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
}

TEST(DataNpy, SaveThenLoadEveryDtype) {
  ScratchDir dir;
  for (DType dt : kAllDTypes) {
    if (dt == DType::kBFloat16) continue;
    std::vector<uint8_t> bytes(2 * 5 * dtype_size(dt));
    for (size_t k = 0; k < bytes.size(); ++k) bytes[k] = (uint8_t)(k * 13 + 5);
    if (dt == DType::kBool)
      for (auto& b : bytes) b &= 1;
    if (dt == DType::kFloat16)  // keep clear of NaN payloads, whose bits need not survive
      for (size_t k = 1; k < bytes.size(); k += 2) bytes[k] &= 0x3f;
    Tensor t = Tensor::from_bytes(bytes.data(), Shape{2, 5}, dt, Device::cpu());
    std::string path = dir.path(std::string(dtype_name(dt)) + ".npy");
    save_npy(path, t);
    std::string file = read_all(path);
    ASSERT_GE(file.size(), 64u);
    EXPECT_EQ(file.substr(0, 6), "\x93NUMPY");
    EXPECT_EQ(file[6], 1);
    size_t header_len = (uint8_t)file[8] | (size_t)(uint8_t)file[9] << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u) << "NumPy aligns the data to 64 bytes";
    EXPECT_EQ(file.size(), 10 + header_len + bytes.size());
    Tensor back = load_npy(path);
    EXPECT_EQ(back.dtype(), dt);
    EXPECT_EQ(back.shape(), (Shape{2, 5}));
    EXPECT_EQ(back.to_bytes(), bytes) << dtype_name(dt);
  }
  // 0-d, 1-d and strided tensors.
  save_npy(dir.path("s.npy"), Tensor::scalar<int32_t>(-7));
  EXPECT_NE(read_all(dir.path("s.npy")).find("'shape': ()"), std::string::npos);
  EXPECT_EQ(load_npy(dir.path("s.npy")).item<int32_t>(), -7);
  save_npy(dir.path("v.npy"), Tensor::from_vector<int64_t>({4, 5, 6}));
  EXPECT_NE(read_all(dir.path("v.npy")).find("'shape': (3,)"), std::string::npos);
  Tensor base = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor transposed = Tensor::view_of(base.storage(), 0, Shape{3, 2}, Shape{1, 3}, DType::kFloat32);
  save_npy(dir.path("t.npy"), transposed);
  EXPECT_EQ(load_npy(dir.path("t.npy")).to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
  // bfloat16 has no .npy dtype.
  Tensor bf = Tensor::from_vector(std::vector<BFloat16>{BFloat16(1.0f)}, Shape{1});
  expect_error([&] { save_npy(dir.path("bf.npy"), bf); }, ErrorCode::kUnsupported,
               {"bfloat16", "float32"});
  expect_error([&] { save_npy(dir.path("no/such/dir/x.npy"), base); }, ErrorCode::kIO,
               {"no/such/dir/x.npy"});
}

TEST(DataNpy, RefusesUnsupportedArrays) {
  expect_error([] { load_npy(fixture("fortran_f4_3x4.npy")); }, ErrorCode::kUnsupported,
               {"fortran_f4_3x4.npy", "Fortran", "ascontiguousarray"});
  expect_error([] { load_npy(fixture("u8_unsupported.npy")); }, ErrorCode::kDType,
               {"u8_unsupported.npy", "'<u8'", "astype"});
  expect_error([] { load_npy(fixture("structured.npy")); }, ErrorCode::kFormat,
               {"structured.npy", "structured"});
  expect_error([] { load_npy(fixture("does_not_exist.npy")); }, ErrorCode::kIO,
               {"does_not_exist.npy"});
}

// A copy of a fixture with its bytes edited.
std::string edited(const ScratchDir& dir, const std::string& name,
                   const std::function<void(std::string&)>& edit) {
  std::string bytes = read_all(fixture("f4_2x3x4.npy"));
  edit(bytes);
  return dir.write(name, bytes);
}

TEST(DataNpy, TruncatedAndCorruptFilesGiveFormatErrors) {
  ScratchDir dir;
  std::string full = read_all(fixture("f4_2x3x4.npy"));
  ASSERT_EQ(full.size(), 128u + 96u);
  std::string p = edited(dir, "cut_data.npy", [](std::string& b) { b.resize(b.size() - 5); });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat,
               {"cut_data.npy", "truncated", "96 bytes", "offset 128", "91"});
  p = edited(dir, "cut_header.npy", [](std::string& b) { b.resize(40); });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat,
               {"cut_header.npy", "truncated", "header length"});
  p = edited(dir, "cut_magic.npy", [](std::string& b) { b.resize(4); });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat,
               {"cut_magic.npy", "truncated", "offset 0"});
  p = edited(dir, "empty.npy", [](std::string& b) { b.clear(); });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"empty.npy", "truncated"});
  p = edited(dir, "magic.npy", [](std::string& b) { b[1] = 'X'; });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"magic.npy", "not a .npy file"});
  p = edited(dir, "version.npy", [](std::string& b) { b[6] = 9; });
  expect_error([&] { load_npy(p); }, ErrorCode::kVersion, {"version.npy", "9.0", "newer"});
  p = edited(dir, "trailing.npy", [](std::string& b) { b += "xyz"; });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"trailing.npy", "trailing bytes", "99"});
  auto replace = [](std::string from, std::string to) {
    // Same length, so the header length field stays right.
    return [from, to](std::string& b) {
      size_t at = b.find(from);
      ASSERT_NE(at, std::string::npos);
      ASSERT_LE(to.size(), from.size());
      b.replace(at, from.size(), to + std::string(from.size() - to.size(), ' '));
    };
  };
  p = edited(dir, "shape.npy", replace("(2, 3, 4)", "(2, x, 4)"));
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat,
               {"shape.npy", "not a valid .npy header", "offset"});
  p = edited(dir, "bigshape.npy",
             replace("(2, 3, 4), }" + std::string(30, ' '), "(999999999, 999999999, 99999999)}"));
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"bigshape.npy", "too large"});
  p = edited(dir, "order.npy", replace("False", "Maybe"));
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"order.npy", "fortran_order"});
  p = edited(dir, "descr.npy", replace("'<f4'", "'xyz'"));
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat, {"descr.npy", "xyz"});
  p = edited(dir, "nine_dims.npy",
             replace("(2, 3, 4), }" + std::string(20, ' '), "(1,1,1,1,1,1,1,2,3,4)}"));
  expect_error([&] { load_npy(p); }, ErrorCode::kUnsupported,
               {"nine_dims.npy", "10 dimensions", "at most 8"});
  p = edited(dir, "hlen.npy", [](std::string& b) {
    b[8] = (char)0xff;
    b[9] = (char)0x7f;
  });
  expect_error([&] { load_npy(p); }, ErrorCode::kFormat,
               {"hlen.npy", "truncated", "header length"});
}

TEST(DataNpy, RandomCorruptionNeverCrashes) {
  ScratchDir dir;
  std::string full = read_all(fixture("i8_2x3x4.npy"));
  std::mt19937 gen(123);
  int refused = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = full;
    int edits = 1 + trial % 4;
    for (int e = 0; e < edits; ++e) b[gen() % 128] = (char)(gen() & 0xff);  // header region
    if (trial % 5 == 0) b.resize(gen() % b.size());
    std::string p = dir.write("fuzz.npy", b);
    try {
      Tensor t = load_npy(p);
      EXPECT_LE(t.nbytes(), b.size());
    } catch (const Error& e) {
      ++refused;
      EXPECT_NE(std::string(e.what()).find("fuzz.npy"), std::string::npos) << e.what();
    }
  }
  EXPECT_GT(refused, 0);
}

TEST(DataNpy, NumpySourceRowsAndBatches) {
  Dataset ds = NumpySource({{"x", fixture("src_x.npy")}, {"y", fixture("src_y.npy")}});
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(ds.get_dataset_size(), 10);
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 10u);
  for (int64_t r = 0; r < 10; ++r) {
    EXPECT_EQ(rows[r][0].shape(), (Shape{4}));
    std::vector<double> x = values_of(rows[r][0]);
    for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(x[k], fixture_value(r * 4 + k, DType::kFloat32));
    EXPECT_EQ(rows[r][1].ndim(), 0);
    EXPECT_EQ(rows[r][1].item<int64_t>(), r);
  }
  std::vector<Row> batches = collect(ds.batch(4));
  ASSERT_EQ(batches.size(), 3u);
  EXPECT_EQ(batches[2][0].shape(), (Shape{2, 4}));
  EXPECT_EQ(batches[2][1].to_vector<int64_t>(), (std::vector<int64_t>{8, 9}));
  EXPECT_EQ(NumpySource(fixture("src_y.npy"), "label").column_names(),
            (std::vector<std::string>{"label"}));
  expect_error(
      [] {
        NumpySource({{"x", fixture("src_x.npy")}, {"b", fixture("b1_2x3x4.npy")}});
      },
      ErrorCode::kShape, {"b1_2x3x4.npy", "src_x.npy", "[2, 3, 4]", "[10, 4]"});
  expect_error([] { NumpySource(fixture("f8_scalar.npy")); }, ErrorCode::kShape,
               {"f8_scalar.npy", "0-d"});
  expect_error(
      [] {
        NumpySource({{"x", fixture("src_x.npy")}, {"x", fixture("src_y.npy")}});
      },
      ErrorCode::kValue, {"'x' appears twice"});
}

}  // namespace
}  // namespace spore::data::test
