// atomic_write_file (NOTE [Atomic writes] in include/spore/format.h) and read_file_bytes.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <random>

#include "io/posix_file.h"
#include "spore/error.h"
#include "spore/format.h"

namespace spore {
namespace {

namespace fs = std::filesystem;

// Buffers small writes so that a writer emitting many little pieces makes few system calls.
class FdSink final : public FileSink {
 public:
  FdSink(int fd, const fs::path& path) : fd_(fd), path_(path) { buf_.reserve(kBuffer); }
  void write(const void* data, size_t bytes) override {
    if (bytes == 0) return;
    if (buf_.size() + bytes > kBuffer) flush();
    if (bytes >= kBuffer) {
      io::write_full(fd_, data, bytes, path_);
    } else {
      auto* p = static_cast<const uint8_t*>(data);
      buf_.insert(buf_.end(), p, p + bytes);
    }
    written_ += bytes;
  }
  void flush() override {
    if (buf_.empty()) return;
    io::write_full(fd_, buf_.data(), buf_.size(), path_);
    buf_.clear();
  }
  uint64_t bytes_written() const override { return written_; }

 private:
  static constexpr size_t kBuffer = 1 << 20;
  int fd_;
  const fs::path& path_;
  std::vector<uint8_t> buf_;
  uint64_t written_ = 0;
};

// A name no other writer (thread or process) picks: pid plus 64 random bits, created with O_EXCL.
std::string temp_suffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 gen{std::random_device{}()};
  char buf[64];
  std::snprintf(buf, sizeof buf, ".tmp.%ld.%016llx", (long)::getpid(),
                (unsigned long long)(gen() ^ counter.fetch_add(1, std::memory_order_relaxed)));
  return buf;
}

// Removes the temporary file when the write does not reach the rename.
struct TempFile {
  fs::path path;
  io::UniqueFd fd;
  bool committed = false;
  ~TempFile() {
    fd.reset();
    if (!committed && !path.empty()) ::unlink(path.c_str());
  }
};

}  // namespace

void atomic_write_file(const fs::path& path, const std::function<void(FileSink&)>& writer) {
  const fs::path target = path;
  const std::string name = target.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw Error(ErrorCode::kIO, "atomic write: '" + target.string() + "' does not name a file");
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");

  TempFile tmp;
  for (int attempt = 0;; ++attempt) {
    tmp.path = dir / ("." + name + temp_suffix());
    int fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      tmp.fd = io::UniqueFd(fd);
      break;
    }
    int err = errno;
    if (err != EEXIST || attempt == 16) {
      tmp.path.clear();  // not ours: nothing to remove
      io::throw_io("cannot write '" + target.string() + "': cannot create a temporary file", dir,
                   err);
    }
  }

  // Replacing a file keeps its permission bits (a fresh file gets 0666 minus the umask).
  struct stat st;
  if (::stat(target.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    if (::fchmod(tmp.fd.get(), st.st_mode & 07777) != 0)
      io::throw_io("cannot set the permissions of", tmp.path, errno);

  {
    FdSink sink(tmp.fd.get(), tmp.path);
    writer(sink);
    sink.flush();
  }
  // The data must be on disk before the rename makes it visible under the real name; otherwise a
  // power loss could leave the new name pointing at an empty or partial file.
  if (::fsync(tmp.fd.get()) != 0) io::throw_io("cannot fsync", tmp.path, errno);
  if (int err = tmp.fd.close_checked()) io::throw_io("cannot close", tmp.path, err);
  if (::rename(tmp.path.c_str(), target.c_str()) != 0)
    io::throw_io("cannot rename '" + tmp.path.string() + "' over", target, errno);
  tmp.committed = true;

  // Makes the rename itself durable. Some file systems cannot fsync a directory (EINVAL); the
  // rename is still atomic there, which is the property that matters most.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0)
    io::throw_io("wrote '" + target.string() + "' but cannot open its directory", dir, errno);
  io::UniqueFd dir_fd(dfd);
  if (::fsync(dfd) != 0 && errno != EINVAL)
    io::throw_io("wrote '" + target.string() + "' but cannot fsync its directory", dir, errno);
}

void atomic_write_file(const fs::path& path, std::span<const uint8_t> bytes) {
  atomic_write_file(path, [&](FileSink& sink) { sink.write(bytes); });
}

std::vector<uint8_t> read_file_bytes(const fs::path& path) {
  io::UniqueFd fd = io::open_for_read(path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) io::throw_io("cannot stat", path, errno);
  std::vector<uint8_t> out;
  // The size is a hint only: the file may change while it is read, or be a pipe or /proc file.
  size_t chunk = std::max<size_t>(4096, (size_t)std::max<off_t>(st.st_size, 0) + 1);
  for (;;) {
    size_t old = out.size();
    out.resize(old + chunk);
    size_t n = io::pread_full(fd.get(), out.data() + old, chunk, old, path);
    out.resize(old + n);
    if (n < chunk) break;
  }
  return out;
}

}  // namespace spore
