// Small POSIX helpers shared by the io sources: an owning file descriptor, loops around read and
// write that survive EINTR and short transfers, and kIO errors that carry the system's reason.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace spore::io {

// The system's text for an errno value ("No such file or directory").
std::string errno_text(int err);
// Throws kIO: "<what> '<path>': <errno text>".
[[noreturn]] void throw_io(std::string_view what, const std::filesystem::path& path, int err);

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  ~UniqueFd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset();  // closes, ignoring errors (use close_checked where the result matters)
  // Closes and returns 0, or the errno of a failed close (which can report a lost write).
  int close_checked();

 private:
  int fd_ = -1;
};

// Opens a file for reading; throws kIO naming the path.
UniqueFd open_for_read(const std::filesystem::path& path);
// Reads up to `bytes` at `offset`; returns how many were read (fewer only at end of file).
// Throws kIO on a read error.
size_t pread_full(int fd, void* data, size_t bytes, uint64_t offset,
                  const std::filesystem::path& path);
// Writes all bytes; throws kIO on error.
void write_full(int fd, const void* data, size_t bytes, const std::filesystem::path& path);

}  // namespace spore::io
