// Artifact locks: reading, hostile locks, verification of sizes and hashes (NOTE [Artifact locks]).
#include "spore/artifact_lock.h"

#include <gtest/gtest.h>

#include <fstream>

#include "io_test_util.h"
#include "spore/format.h"

namespace spore::test {
namespace {

void write_text(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// "abc" has the SHA-256 of FIPS 180-2's first example: an independent reference.
constexpr const char* kAbcSha = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

TEST(ArtifactLock, RoundTripsAndVerifiesAgainstAnIndependentDigest) {
  TempDir dir;
  write_text(dir / "model/weights.bin", "abc");
  write_text(dir / "model/sub/config.json", "{}");
  ArtifactLock lock = make_artifact_lock(dir / "model", {"weights.bin", "sub/config.json"}, "m", "pypi:x", "1.0");
  EXPECT_EQ(lock.files[0].sha256, kAbcSha);
  EXPECT_EQ(lock.files[0].bytes, 3u);
  write_artifact_lock(dir / "model/spore.lock.json", lock);
  ArtifactLock back = read_artifact_lock(dir / "model/spore.lock.json");
  EXPECT_EQ(back.source, "pypi:x");
  ASSERT_EQ(back.files.size(), 2u);
  EXPECT_EQ(back.files[1].name, "sub/config.json");
  VerifyResult r = verify_artifact(dir / "model");
  EXPECT_TRUE(r.ok());
  EXPECT_NO_THROW(require_verified(r));
}

TEST(ArtifactLock, FindsALockBesideAnIgnoredDirectory) {
  TempDir dir;
  write_text(dir / "m/a.bin", "abc");
  write_artifact_lock(dir / "m.lock.json", make_artifact_lock(dir / "m", {"a.bin"}, "m", "s", "r"));
  EXPECT_EQ(find_artifact_lock(dir / "m"), dir / "m.lock.json");
  EXPECT_TRUE(verify_artifact(dir / "m").ok());
  EXPECT_TRUE(verify_artifact(dir / "m.lock.json").ok());  // the lock names its directory
}

TEST(ArtifactLock, ReportsEveryKindOfMismatch) {
  TempDir dir;
  write_text(dir / "m/a.bin", "abc");
  write_text(dir / "m/b.bin", "abcd");
  write_text(dir / "m/c.bin", "xyz");
  ArtifactLock lock = make_artifact_lock(dir / "m", {"a.bin", "b.bin", "c.bin"}, "m", "s", "r");
  write_text(dir / "m/b.bin", "abcde");  // size changed
  write_text(dir / "m/c.bin", "xyZ");    // same size, other bytes
  std::filesystem::remove(dir / "m/a.bin");
  VerifyResult r = verify_artifact(dir / "m", lock);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.files[0].check, FileCheck::kMissing);
  EXPECT_EQ(r.files[1].check, FileCheck::kSizeMismatch);
  EXPECT_EQ(r.files[2].check, FileCheck::kHashMismatch);
  expect_error([&] { require_verified(r); }, ErrorCode::kFormat, "a.bin: missing", "b.bin: size mismatch",
               "c.bin: SHA-256 mismatch", "--allow-unverified");
}

TEST(ArtifactLock, RefusesHostileLocks) {
  TempDir dir;
  const std::string sha = std::string(64, 'a');
  auto lock_with = [&](const std::string& files) {
    write_text(dir / "spore.lock.json", R"({"source":"s","revision":"r","files":)" + files + "}");
    return dir / "spore.lock.json";
  };
  auto file = [&](const std::string& name, const std::string& bytes, const std::string& digest) {
    return R"({"name":")" + name + R"(","bytes":)" + bytes + R"(,"sha256":")" + digest + R"("})";
  };
  expect_error([&] { read_artifact_lock(lock_with("[" + file("../etc/passwd", "1", sha) + "]")); },
               ErrorCode::kFormat, "not a relative path inside the artifact");
  expect_error([&] { read_artifact_lock(lock_with("[" + file("/etc/passwd", "1", sha) + "]")); },
               ErrorCode::kFormat, "not a relative path");
  expect_error([&] { read_artifact_lock(lock_with("[" + file("a", "-1", sha) + "]")); }, ErrorCode::kFormat,
               "files[0]", "'bytes' has the wrong type");
  expect_error([&] { read_artifact_lock(lock_with("[" + file("a", "1", "ABC") + "]")); }, ErrorCode::kFormat,
               "64 lowercase hex");
  expect_error([&] { read_artifact_lock(lock_with("[" + file("a", "1", sha) + "," + file("a", "2", sha) + "]")); },
               ErrorCode::kFormat, "listed twice");
  expect_error([&] { read_artifact_lock(lock_with("[]")); }, ErrorCode::kFormat, "'files' is empty");
  write_text(dir / "spore.lock.json", "{\"source\": ");
  expect_error([&] { read_artifact_lock(dir / "spore.lock.json"); }, ErrorCode::kFormat, "not a JSON object");
  expect_error([&] { find_artifact_lock(dir / "nowhere"); }, ErrorCode::kIO, "no artifact lock");
}

}  // namespace
}  // namespace spore::test
