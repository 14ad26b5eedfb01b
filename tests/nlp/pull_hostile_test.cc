// spore pull against a hostile hub (tools/test_hub.py's hostile repositories, on 127.0.0.1): what
// it reads is bounded (NOTE [Model hub]). A listing nested 100,000 deep is refused, not a crash;
// an endless listing stops at kMaxListingBytes; a file sent past its declared size, or past
// max_undeclared_bytes when none is declared, is refused and removed; a hub that trickles bytes
// is dropped after the low-speed time; endless headers stop at a bound; an earlier lock of the same
// commit bounds a file the listing does not size; a listing holding both
// "model.bin" and "model.bin.part" pulls both, since partial files live in kPartialDir.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "local_hub.h"
#include "spore/artifact_lock.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/hub.h"
#include "test_util.h"

namespace spore {
namespace {

namespace fs = std::filesystem;
using test::expect_error;

class PullHostile : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    root_ = fs::temp_directory_path() / ("spore_pull_hostile_" + std::to_string(::getpid()));
    fs::remove_all(root_);
    const fs::path hub = root_ / "hub";
    for (const char* repo : {"o/nested-listing", "o/endless-listing"}) fs::create_directories(hub / repo);
    for (const char* repo : {"o/endless-file", "o/bare-endless-file"})
      test::hub_write_text(hub / repo / "config.json", "{\"model_type\": \"llama\"}\n");
    test::hub_write_text(hub / "o/trickle/slow.txt", std::string(4096, 's'));  // 34 minutes at 2 bytes/s
    test::hub_write_text(hub / "o/endless-headers/config.json", "{}\n");
    // model.bin.part is shorter than model.bin, so a transfer of model.bin that took it for its own
    // partial file would resume from its end and fail the hash.
    test::hub_write_text(hub / "o/part-clash/model.bin", std::string(5000, 'M'));
    test::hub_write_text(hub / "o/part-clash/model.bin.part", std::string(1000, 'P'));
    hub_ = std::make_unique<test::LocalHub>(hub, root_);
    ASSERT_TRUE(hub_->started()) << "tools/test_hub.py did not start";
  }
  static void TearDownTestSuite() {
    hub_.reset();
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  static hub::PullOptions options(const std::string& repo) {
    hub::PullOptions o;
    o.repo = repo;
    o.revision = test::hub_commit_of(repo);
    o.endpoint = hub_->endpoint();
    o.out = root_ / "out" / repo;
    return o;
  }

  static inline fs::path root_;
  static inline std::unique_ptr<test::LocalHub> hub_;
};

// Run through the command line, so a crash shows as a signal rather than ending the test program.
TEST_F(PullHostile, ANestedListingIsAnErrorNotACrash) {
  const hub::PullOptions o = options("o/nested-listing");
  const std::string cmd = std::string(SPORE_BINARY_DIR) + "/bin/spore pull " + o.repo + " --revision " + o.revision +
                          " --endpoint " + o.endpoint + " --out " + o.out.string() + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) text.append(buf, n);
  const int status = ::pclose(p);
  ASSERT_TRUE(WIFEXITED(status)) << "spore pull died of signal " << WTERMSIG(status) << "\n" << text;
  EXPECT_EQ(WEXITSTATUS(status), 1) << text;
  EXPECT_NE(text.find("deeper than"), std::string::npos) << text;
  EXPECT_FALSE(fs::exists(o.out / "spore.lock.json"));
}

TEST_F(PullHostile, AnEndlessListingStopsAtItsBound) {
  const auto t0 = std::chrono::steady_clock::now();
  expect_error([&] { hub::pull(options("o/endless-listing")); }, ErrorCode::kIO, "listing is longer than 16 MiB");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

// The listing declares config.json's size; the hub sends it and then zeros without end.
TEST_F(PullHostile, AFileSentPastItsDeclaredSizeIsRefused) {
  const hub::PullOptions o = options("o/endless-file");
  expect_error([&] { hub::pull(o); }, ErrorCode::kFormat, "config.json", "more than 24 bytes", "declared");
  EXPECT_FALSE(fs::exists(o.out / "config.json"));
  EXPECT_FALSE(fs::exists(o.out / "spore.lock.json"));
  EXPECT_TRUE(fs::is_empty(o.out / hub::kPartialDir)) << "the bytes sent are not kept to resume from";
}

// Names only, no Content-Length, no hash: nothing declares a size, so the file is bounded by
// max_undeclared_bytes and refused past it, rather than taken as pulled.
TEST_F(PullHostile, AFileWithoutADeclaredSizeIsBounded) {
  hub::PullOptions o = options("o/bare-endless-file");
  o.max_undeclared_bytes = 1 << 20;
  expect_error([&] { hub::pull(o); }, ErrorCode::kFormat, "config.json", "more than 1048576 bytes",
               "--max-undeclared-size");
  EXPECT_FALSE(fs::exists(o.out / "config.json"));
  EXPECT_FALSE(fs::exists(o.out / "spore.lock.json"));
}

// The same hub into a folder that an earlier pull of the same commit locked: the lock's size is the
// bound (24 bytes, not max_undeclared_bytes).
TEST_F(PullHostile, AnEarlierLockBoundsAFileTheListingDoesNotSize) {
  const hub::PullOptions o = options("o/bare-endless-file");
  const fs::path src = root_ / "hub" / "o/bare-endless-file/config.json";
  fs::create_directories(o.out);
  write_artifact_lock(o.out / "spore.lock.json", ArtifactLock{o.repo, "hf:" + o.repo, o.revision,
                                                              {{"config.json", fs::file_size(src), sha256_file(src)}}});
  expect_error([&] { hub::pull(o); }, ErrorCode::kFormat, "config.json", "more than 24 bytes", "declared");
  EXPECT_FALSE(fs::exists(o.out / "config.json"));
}

// 2 bytes a second: each attempt is dropped after low_speed_seconds below low_speed_bytes per
// second, and the pull ends after its attempts instead of waiting for the trickle.
TEST_F(PullHostile, ATricklingHubIsDroppedAfterTheLowSpeedTime) {
  hub::PullOptions o = options("o/trickle");
  o.low_speed_bytes = 100;
  o.low_speed_seconds = 1;
  o.max_attempts = 2;
  const auto t0 = std::chrono::steady_clock::now();
  expect_error([&] { hub::pull(o); }, ErrorCode::kIO, "slow.txt", "still incomplete after 2 attempts",
               "slower than 100 bytes/s for 1 s");
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
  EXPECT_FALSE(fs::exists(o.out / "slow.txt"));
}

TEST_F(PullHostile, EndlessHeadersStopAtTheirBound) {
  hub::PullOptions o = options("o/endless-headers");
  expect_error([&] { hub::pull(o); }, ErrorCode::kIO, "config.json", "headers run past 256 KiB");
}

// "model.bin" and "model.bin.part" are both files of the repository. Pulled, then pulled again
// after model.bin is deleted: both come back verified, and neither is taken for the other's
// partial file (which deleted the verified model.bin.part and blamed the mirror).
TEST_F(PullHostile, AListedPartFileIsNotTakenForAPartialDownload) {
  const hub::PullOptions o = options("o/part-clash");
  const fs::path src = root_ / "hub" / "o/part-clash";
  hub::pull(o);
  EXPECT_EQ(test::hub_read_text(o.out / "model.bin"), test::hub_read_text(src / "model.bin"));
  EXPECT_EQ(test::hub_read_text(o.out / "model.bin.part"), test::hub_read_text(src / "model.bin.part"));
  fs::remove(o.out / "model.bin");
  const hub::PullResult r = hub::pull(o);
  ASSERT_EQ(r.files.size(), 2u);
  EXPECT_EQ(test::hub_read_text(o.out / "model.bin"), test::hub_read_text(src / "model.bin"));
  EXPECT_EQ(test::hub_read_text(o.out / "model.bin.part"), test::hub_read_text(src / "model.bin.part"));
  EXPECT_TRUE(verify_artifact(o.out).ok());
  EXPECT_FALSE(fs::exists(o.out / hub::kPartialDir));
}

}  // namespace
}  // namespace spore
