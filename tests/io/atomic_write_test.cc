// atomic_write_file: contents, replacement, cleanup after failures, and a writer killed with
// SIGKILL in the middle of a large write (the old file must survive intact under its name).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdexcept>

#include "io/io_test_util.h"
#include "spore/format.h"

namespace spore {
namespace {

using test::TempDir;

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

TEST(AtomicWrite, WritesAndReplaces) {
  TempDir dir;
  auto target = dir / "out.bin";
  atomic_write_file(target, as_bytes("first"));
  EXPECT_EQ(test::read_raw(target), "first");
  atomic_write_file(target, as_bytes("second, longer"));
  EXPECT_EQ(test::read_raw(target), "second, longer");
  atomic_write_file(target, as_bytes(""));
  EXPECT_EQ(test::read_raw(target), "");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"out.bin"});  // no temporary file left
  std::vector<uint8_t> back = read_file_bytes(target);
  EXPECT_TRUE(back.empty());
}

TEST(AtomicWrite, WriterCallbackStreamsManyPieces) {
  TempDir dir;
  auto target = dir / "stream.bin";
  std::string expect;
  atomic_write_file(target, [&](FileSink& sink) {
    // Small pieces (buffered) and a piece larger than the buffer (written through).
    for (int i = 0; i < 10000; ++i) {
      std::string piece = std::to_string(i) + ",";
      sink.write(piece);
      expect += piece;
    }
    std::string big(3 << 20, 'z');
    sink.write(big);
    expect += big;
    EXPECT_EQ(sink.bytes_written(), expect.size());
  });
  EXPECT_EQ(test::read_raw(target), expect);
  EXPECT_EQ(read_file_bytes(target).size(), expect.size());
  EXPECT_EQ(sha256_file(target), sha256_bytes(std::string_view(expect)));
}

TEST(AtomicWrite, FailingWriterKeepsOldFileAndRemovesTemp) {
  TempDir dir;
  auto target = dir / "keep.bin";
  atomic_write_file(target, as_bytes("old contents"));
  EXPECT_THROW(atomic_write_file(target,
                                 [&](FileSink& sink) {
                                   sink.write(std::string(5 << 20, 'x'));
                                   throw std::runtime_error("writer failed");
                                 }),
               std::runtime_error);
  EXPECT_EQ(test::read_raw(target), "old contents");
  EXPECT_EQ(dir.list(), std::vector<std::string>{"keep.bin"});
}

TEST(AtomicWrite, KeepsPermissionsOfReplacedFile) {
  TempDir dir;
  auto target = dir / "mode.bin";
  atomic_write_file(target, as_bytes("a"));
  ASSERT_EQ(::chmod(target.c_str(), 0640), 0);
  atomic_write_file(target, as_bytes("b"));
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST(AtomicWrite, ErrorsNameThePathAndReason) {
  TempDir dir;
  auto missing = dir / "no_such_dir" / "f.bin";
  test::expect_error([&] { atomic_write_file(missing, as_bytes("x")); }, ErrorCode::kIO,
                     {"f.bin", "no_such_dir", "No such file or directory"});
  // Renaming a file over a directory fails: the temporary file must not stay behind.
  std::filesystem::create_directory(dir / "a_dir");
  test::expect_error([&] { atomic_write_file(dir / "a_dir", as_bytes("x")); }, ErrorCode::kIO,
                     {"a_dir", "Is a directory"});
  EXPECT_EQ(dir.list(), std::vector<std::string>{"a_dir"});
  test::expect_error([&] { read_file_bytes(dir / "nope"); }, ErrorCode::kIO, {"nope"});
  test::expect_error([&] { atomic_write_file(dir.path() / "..", as_bytes("x")); }, ErrorCode::kIO,
                     {"does not name a file"});
}

TEST(AtomicWrite, KilledWriterLeavesOldFileIntact) {
  TempDir dir;
  auto target = dir / "model.bin";
  atomic_write_file(target, as_bytes("old contents"));

  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  constexpr size_t kChunk = 1 << 20, kChunks = 8;
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: write 8 MiB, make sure it reached the temporary file, tell the parent, then hang
    // until killed. It never returns into GoogleTest.
    ::close(fds[0]);
    try {
      atomic_write_file(target, [&](FileSink& sink) {
        std::vector<uint8_t> chunk(kChunk, 0xab);
        for (size_t i = 0; i < kChunks; ++i) sink.write(chunk);
        sink.flush();
        char c = 'w';
        if (::write(fds[1], &c, 1) != 1) ::_exit(3);
        for (;;) ::pause();
      });
    } catch (...) {
    }
    ::_exit(2);
  }
  ::close(fds[1]);
  struct pollfd p = {fds[0], POLLIN, 0};
  int ready = ::poll(&p, 1, 30000);
  char c = 0;
  bool signalled = ready == 1 && ::read(fds[0], &c, 1) == 1 && c == 'w';
  ::close(fds[0]);
  if (signalled) {
    // Mid-write: a temporary file with the child's bytes exists beside the untouched target.
    std::vector<std::string> names = dir.list();
    ASSERT_EQ(names.size(), 2u);
    std::string tmp = names[0] == "model.bin" ? names[1] : names[0];
    EXPECT_EQ(tmp.rfind(".model.bin.tmp." + std::to_string(pid) + ".", 0), 0u) << tmp;
    EXPECT_EQ(std::filesystem::file_size(dir / tmp), kChunk * kChunks);
    EXPECT_EQ(test::read_raw(target), "old contents");
  }
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(signalled) << "the child never reached the middle of its write";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

  // After the crash the real name still holds the complete old file; the leftover temporary
  // file has another name, and does not stop the next write.
  EXPECT_EQ(test::read_raw(target), "old contents");
  std::vector<std::string> names = dir.list();
  ASSERT_EQ(names.size(), 2u);
  for (const auto& n : names) {
    if (n != "model.bin") {
      EXPECT_EQ(n.rfind(".model.bin.tmp.", 0), 0u) << n;
    }
  }
  atomic_write_file(target, as_bytes("new contents"));
  EXPECT_EQ(test::read_raw(target), "new contents");
}

}  // namespace
}  // namespace spore
