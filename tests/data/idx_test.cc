// IDX (MNIST) files: the committed fixtures, IdxSource, writing, and refusal of bad files.
#include <random>

#include "data_test_util.h"

namespace spore::data::test {
namespace {

TEST(DataIdx, LoadsMnistStyleImagesAndLabels) {
  Tensor images = load_idx(fixture("images_5x4x3.idx3-ubyte"));
  EXPECT_EQ(images.dtype(), DType::kUInt8);
  EXPECT_EQ(images.shape(), (Shape{5, 4, 3}));
  std::vector<uint8_t> v = images.to_vector<uint8_t>();
  for (int i = 0; i < 60; ++i) EXPECT_EQ(v[i], (i * 37 + 11) % 256) << i;
  Tensor f = load_idx(fixture("f4_2x2.idx"));
  EXPECT_EQ(f.dtype(), DType::kFloat32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2.0f, 0.25f, 8.0f}));
}

TEST(DataIdx, IdxSourceYieldsImageAndInt32Label) {
  Dataset ds = IdxSource(fixture("images_5x4x3.idx3-ubyte"), fixture("labels_5.idx1-ubyte"));
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"image", "label"}));
  EXPECT_EQ(ds.get_dataset_size(), 5);
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3][0].shape(), (Shape{4, 3}));
  EXPECT_EQ(rows[3][0].to_vector<uint8_t>()[0], (36 * 37 + 11) % 256);
  EXPECT_EQ(rows[3][1].dtype(), DType::kInt32);
  EXPECT_EQ(rows[3][1].item<int32_t>(), 3);
  std::vector<Row> b = collect(ds.batch(2, true));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[1][0].shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(b[1][1].to_vector<int32_t>(), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(IdxSource(fixture("images_5x4x3.idx3-ubyte")).column_names(),
            (std::vector<std::string>{"image"}));
}

TEST(DataIdx, SaveThenLoad) {
  ScratchDir dir;
  Tensor i32 = Tensor::from_vector<int32_t>({1, -2, 300000, 4, 5, -6}, Shape{3, 2});
  save_idx(dir.path("a.idx"), i32);
  std::string bytes = read_all(dir.path("a.idx"));
  EXPECT_EQ(bytes.substr(0, 4), std::string("\0\0\x0c\x02", 4));
  EXPECT_EQ(bytes.size(), 4u + 8u + 24u);
  EXPECT_EQ(load_idx(dir.path("a.idx")).to_vector<int32_t>(), i32.to_vector<int32_t>());
  Tensor f64 = Tensor::from_vector<double>({0.5, -1e300});
  save_idx(dir.path("d.idx"), f64);
  EXPECT_EQ(load_idx(dir.path("d.idx")).to_vector<double>(), (std::vector<double>{0.5, -1e300}));
  Tensor i8 = Tensor::from_vector<int8_t>({-1, 2});
  save_idx(dir.path("b.idx"), i8);
  EXPECT_EQ(load_idx(dir.path("b.idx")).to_vector<int8_t>(), (std::vector<int8_t>{-1, 2}));
  expect_error([&] { save_idx(dir.path("c.idx"), Tensor::from_vector<int64_t>({1})); },
               ErrorCode::kUnsupported, {"int64"});
  expect_error([&] { save_idx(dir.path("s.idx"), Tensor::scalar<uint8_t>(1)); }, ErrorCode::kShape,
               {"0-d"});
}

TEST(DataIdx, BadFilesGiveFormatErrorsWithFileAndOffset) {
  ScratchDir dir;
  std::string images = read_all(fixture("images_5x4x3.idx3-ubyte"));
  expect_error(
      [&] { IdxSource(fixture("images_5x4x3.idx3-ubyte"), fixture("labels_4.idx1-ubyte")); },
      ErrorCode::kFormat,
      {"labels_4.idx1-ubyte", "4 labels", "images_5x4x3.idx3-ubyte", "5 images"});
  std::string p = dir.write("cut.idx", images.substr(0, images.size() - 7));
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat,
               {"cut.idx", "truncated", "60 bytes", "offset 16", "53"});
  p = dir.write("cut_dims.idx", images.substr(0, 9));
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat,
               {"cut_dims.idx", "truncated", "dimension 1 of 3", "offset 8"});
  p = dir.write("short.idx", images.substr(0, 2));
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat, {"short.idx", "truncated", "magic"});
  std::string bad = images;
  bad[0] = 8;
  p = dir.write("magic.idx", bad);
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat,
               {"magic.idx", "0x08000803", "not an IDX file"});
  bad = images;
  bad[2] = 0x0B;
  p = dir.write("type.idx", bad);
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat, {"type.idx", "element type 0x0b"});
  bad = images;
  bad[3] = 0;
  p = dir.write("ndim.idx", bad);
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat, {"ndim.idx", "0 dimensions"});
  p = dir.write("extra.idx", images + "zz");
  expect_error([&] { load_idx(p); }, ErrorCode::kFormat, {"extra.idx", "trailing bytes"});
  expect_error(
      [&] { IdxSource(fixture("images_5x4x3.idx3-ubyte"), fixture("images_5x4x3.idx3-ubyte")); },
      ErrorCode::kFormat, {"one dimension", "[5, 4, 3]"});
  expect_error([&] { load_idx(dir.path("missing.idx")); }, ErrorCode::kIO, {"missing.idx"});
  expect_error([&] { load_idx(dir.path("")); }, ErrorCode::kIO, {"directory"});
}

TEST(DataIdx, RandomCorruptionNeverCrashes) {
  ScratchDir dir;
  std::string full = read_all(fixture("images_5x4x3.idx3-ubyte"));
  std::mt19937 gen(99);
  for (int trial = 0; trial < 300; ++trial) {
    std::string b = full;
    for (int e = 0; e < 1 + trial % 3; ++e) b[gen() % 16] = (char)(gen() & 0xff);
    if (trial % 4 == 0) b.resize(gen() % b.size());
    std::string p = dir.write("fuzz.idx", b);
    try {
      Tensor t = load_idx(p);
      EXPECT_LE(t.nbytes(), b.size());
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("fuzz.idx"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace spore::data::test
