// SHA-256: FIPS 180-2 test vectors, files against bytes, incremental against one-shot, errors.
#include <gtest/gtest.h>

#include "io/io_test_util.h"
#include "spore/format.h"

namespace spore {
namespace {

using test::TempDir;

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_bytes(std::string_view("")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_bytes(std::string_view("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(
      sha256_bytes(std::string_view("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::vector<uint8_t> million(1000000, 'a');
  EXPECT_EQ(sha256_bytes(std::span<const uint8_t>(million)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalMatchesOneShotAndResets) {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = (uint8_t)(i * 131 + 7);
  Sha256 h;
  h.update(data.data(), 1);
  h.update(data.data() + 1, 2998);
  h.update(std::span<const uint8_t>(data).subspan(2999));
  EXPECT_EQ(h.hex_digest(), sha256_bytes(std::span<const uint8_t>(data)));
  // After a digest the object starts over.
  h.update("abc", 3);
  EXPECT_EQ(h.hex_digest(), sha256_bytes(std::string_view("abc")));
  Sha256 moved = std::move(h);
  EXPECT_EQ(moved.hex_digest(), sha256_bytes(std::string_view("")));
}

TEST(Sha256, FileMatchesBytes) {
  TempDir dir;
  // Larger than the 1 MiB read chunk and not a multiple of it.
  std::string big((3 << 20) + 5, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = (char)(i * 2654435761u >> 24);
  test::write_raw(dir / "big.bin", big);
  EXPECT_EQ(sha256_file(dir / "big.bin"), sha256_bytes(std::string_view(big)));
  test::write_raw(dir / "empty.bin", "");
  EXPECT_EQ(sha256_file(dir / "empty.bin"),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256, MissingFileIsAnIOError) {
  TempDir dir;
  test::expect_error([&] { sha256_file(dir / "nope.bin"); }, ErrorCode::kIO,
                     {"nope.bin", "No such file"});
  test::expect_error([&] { sha256_file(dir.path()); }, ErrorCode::kIO, {dir.path().string()});
}

}  // namespace
}  // namespace spore
