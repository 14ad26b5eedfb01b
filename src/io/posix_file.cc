#include "io/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "spore/error.h"

namespace spore::io {

std::string errno_text(int err) {
  return std::system_category().message(err);
}

void throw_io(std::string_view what, const std::filesystem::path& path, int err) {
  throw Error(ErrorCode::kIO, std::string(what) + " '" + path.string() + "': " + errno_text(err));
}

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    reset();
    fd_ = o.release();
  }
  return *this;
}

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int UniqueFd::close_checked() {
  if (fd_ < 0) return 0;
  // Linux releases the descriptor even when close fails, so it must not be retried (EINTR too).
  int rc = ::close(fd_);
  fd_ = -1;
  return rc == 0 ? 0 : errno;
}

UniqueFd open_for_read(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_io("cannot open", path, errno);
  UniqueFd owned(fd);
  struct stat st;
  if (::fstat(fd, &st) != 0) throw_io("cannot stat", path, errno);
  if (S_ISDIR(st.st_mode)) throw_io("cannot read", path, EISDIR);
  return owned;
}

size_t pread_full(int fd, void* data, size_t bytes, uint64_t offset,
                  const std::filesystem::path& path) {
  auto* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = ::pread(fd, p + done, bytes - done, (off_t)(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", path, errno);
    }
    if (n == 0) break;  // end of file
    done += (size_t)n;
  }
  return done;
}

void write_full(int fd, const void* data, size_t bytes, const std::filesystem::path& path) {
  auto* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot write", path, errno);
    }
    p += n;
    bytes -= (size_t)n;
  }
}

}  // namespace spore::io
