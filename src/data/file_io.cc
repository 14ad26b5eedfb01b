#include "data/file_io.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "data/tensor_bytes.h"

namespace spore::data::detail {

namespace {
std::string sys_error() {
  return std::strerror(errno);
}
}  // namespace

InFile::InFile(const std::string& path) : path_(path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(ErrorCode::kIO, "cannot read '" + path + "': it is a directory, not a file");
  errno = 0;
  f_ = std::fopen(path.c_str(), "rb");
  if (!f_) throw Error(ErrorCode::kIO, "cannot open '" + path + "' for reading: " + sys_error());
  off_t end = -1;
  if (fseeko(f_, 0, SEEK_END) != 0 || (end = ftello(f_)) < 0 || fseeko(f_, 0, SEEK_SET) != 0) {
    std::fclose(f_);
    f_ = nullptr;
    throw Error(ErrorCode::kIO, "cannot read '" + path + "': it is not a regular, seekable file");
  }
  size_ = (uint64_t)end;
}

InFile::~InFile() {
  if (f_) std::fclose(f_);
}

void InFile::read(void* dst, uint64_t n, const std::string& what) {
  if (n > size_ - pos_)
    format_error(path_, "the file is truncated: " + what + " needs " + std::to_string(n) +
                            " bytes at byte offset " + std::to_string(pos_) +
                            " but the file has only " + std::to_string(size_ - pos_) +
                            " from there (file size " + std::to_string(size_) + ")");
  read_some(dst, n);
}

uint64_t InFile::read_some(void* dst, uint64_t n) {
  n = std::min(n, size_ - pos_);
  if (n == 0) return 0;
  errno = 0;
  if (std::fread(dst, 1, n, f_) != n)
    throw Error(ErrorCode::kIO, "reading '" + path_ + "' failed at byte offset " +
                                    std::to_string(pos_) + ": " + sys_error());
  pos_ += n;
  return n;
}

void InFile::rewind() {
  if (fseeko(f_, 0, SEEK_SET) != 0)
    throw Error(ErrorCode::kIO, "cannot seek in '" + path_ + "': " + sys_error());
  pos_ = 0;
}

OutFile::OutFile(const std::string& path) : path_(path) {
  errno = 0;
  f_ = std::fopen(path.c_str(), "wb");
  if (!f_) throw Error(ErrorCode::kIO, "cannot open '" + path + "' for writing: " + sys_error());
}

OutFile::~OutFile() {
  if (f_) std::fclose(f_);
}

void OutFile::write(const void* src, uint64_t n) {
  errno = 0;
  if (n && std::fwrite(src, 1, n, f_) != n)
    throw Error(ErrorCode::kIO, "writing '" + path_ + "' failed: " + sys_error());
}

void OutFile::write_tensor(const Tensor& host) {
  if (host.is_contiguous()) {
    write(host.data_ptr(), host.nbytes());
    return;
  }
  std::vector<unsigned char> buf(host.nbytes());
  copy_elements(host, buf.data());
  write(buf.data(), buf.size());
}

void OutFile::close() {
  errno = 0;
  int rc = std::fclose(f_);
  f_ = nullptr;
  if (rc != 0) throw Error(ErrorCode::kIO, "writing '" + path_ + "' failed: " + sys_error());
}

void format_error(const std::string& path, const std::string& message) {
  throw Error(ErrorCode::kFormat, "'" + path + "': " + message);
}

void swap_bytes(void* data, uint64_t n, size_t width) {
  auto* p = static_cast<unsigned char*>(data);
  for (uint64_t i = 0; i < n; ++i, p += width)
    for (size_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(p[a], p[b]);
}

bool checked_bytes(const Shape& shape, size_t itemsize, uint64_t& bytes) {
  // The extents other than 0 must multiply within the limit even when some extent is 0: an
  // empty array still gets strides from them (NOTE [Shape overflow]).
  constexpr uint64_t kLimit = uint64_t{1} << 62;
  uint64_t n = itemsize;
  bool empty = false;
  for (int64_t d : shape) {
    if (d < 0) return false;
    empty |= d == 0;
    const uint64_t extent = d == 0 ? 1 : (uint64_t)d;
    if (n > kLimit / extent) return false;
    n *= extent;
  }
  bytes = empty ? 0 : n;
  return true;
}

}  // namespace spore::data::detail
