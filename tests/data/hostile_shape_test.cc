// Regression tests for issue 15, finding 1: an array with a 0 extent has no bytes, so it passed
// every size check while its other extents overflowed int64 strides, and iterating it as a source
// was signed overflow in row_view (NOTE [Shape overflow]). Both reproducers must be a typed
// spore::Error, never undefined behaviour.
#include "data_test_util.h"

namespace spore::data::test {
namespace {

// The 20-byte IDX file from the issue: uint8, dims [3, 0, 0xC0000000, 0x5B000000].
std::string hostile_idx() {
  const unsigned char b[] = {0x00, 0x00, 0x08, 0x04, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
                             0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0x5b, 0x00, 0x00, 0x00};
  return std::string(reinterpret_cast<const char*>(b), sizeof b);
}

// A version 1.0 .npy file holding only `header` (padded to 64 bytes as NumPy does).
std::string npy_with_header(std::string header) {
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string b = "\x93NUMPY";
  b += '\x01';
  b += '\x00';
  b += (char)(header.size() & 0xff);
  b += (char)(header.size() >> 8);
  return b + header;
}

TEST(DataHostileShape, IdxWithZeroAndOverflowingExtentsIsAnError) {
  ScratchDir dir;
  const std::string path = dir.write("zero_overflow.idx", hostile_idx());
  expect_error([&] { load_idx(path); }, ErrorCode::kFormat, {"zero_overflow.idx", "too large"});
  expect_error([&] { collect(IdxSource(path)); }, ErrorCode::kFormat, {"zero_overflow.idx"});
}

TEST(DataHostileShape, NpyWithZeroAndOverflowingExtentsIsAnError) {
  ScratchDir dir;
  const std::string path = dir.write(
      "zero_overflow.npy",
      npy_with_header(
          "{'descr': '|u1', 'fortran_order': False, 'shape': (3, 0, 5000000000000000000), }"));
  expect_error([&] { load_npy(path); }, ErrorCode::kFormat, {"zero_overflow.npy", "too large"});
  expect_error([&] { collect(NumpySource(path)); }, ErrorCode::kFormat, {"zero_overflow.npy"});
}

TEST(DataHostileShape, EmptyArraysWithSaneExtentsStillLoad) {
  ScratchDir dir;
  const std::string path = dir.write(
      "empty.npy", npy_with_header("{'descr': '|u1', 'fortran_order': False, 'shape': (3, 0, 7), }"));
  Tensor t = load_npy(path);
  EXPECT_EQ(t.shape(), (Shape{3, 0, 7}));
  EXPECT_EQ(t.numel(), 0);
  std::vector<Row> rows = collect(NumpySource(path));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][0].shape(), (Shape{0, 7}));
}

}  // namespace
}  // namespace spore::data::test
