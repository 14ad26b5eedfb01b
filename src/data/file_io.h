// Small binary-file helpers shared by the readers and writers: every failure is a spore::Error
// naming the file (kIO for the system's refusals, kFormat for content that is not as claimed).
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "spore/tensor.h"

namespace spore::data::detail {

class InFile {
 public:
  explicit InFile(const std::string& path);  // kIO when it cannot be opened
  ~InFile();
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  uint64_t tell() const { return pos_; }
  // Reads exactly n bytes at the current position; a short file is a kFormat error that names
  // `what` (what was being read), the offset and the bytes missing.
  void read(void* dst, uint64_t n, const std::string& what);
  // Reads up to n bytes (fewer only at the end of the file); returns how many.
  uint64_t read_some(void* dst, uint64_t n);
  void rewind();  // back to byte 0

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
};

class OutFile {
 public:
  explicit OutFile(const std::string& path);
  ~OutFile();
  OutFile(const OutFile&) = delete;
  OutFile& operator=(const OutFile&) = delete;
  void write(const void* src, uint64_t n);
  void write_tensor(const Tensor& host);  // the elements in row-major order
  void close();                           // reports errors of the final flush

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
};

// A file's bytes in chunks, inflated on the fly when it is gzip-compressed (NOTE [Compressed
// inputs] in gzip.cc). Memory is fixed, whatever the size of the file or of its inflated text.
class TextStream {
 public:
  explicit TextStream(const std::string& path);  // kIO when it cannot be opened
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  const std::string& path() const { return file_.path(); }
  // Up to n bytes of text into dst; 0 only at the end. A corrupt or truncated gzip stream is a
  // kFormat error naming the file.
  size_t read(char* dst, size_t n);

 private:
  struct Inflater;  // zlib's state, kept out of this header
  InFile file_;
  std::unique_ptr<Inflater> inflater_;  // null for plain text
};

// "'<path>': <message>" as a kFormat error.
[[noreturn]] void format_error(const std::string& path, const std::string& message);

// Reverses the byte order of n elements of `width` bytes in place.
void swap_bytes(void* data, uint64_t n, size_t width);

// numel * itemsize of dims, or false when it overflows 62 bits; 0 extents count as 1 in that
// check, so an empty shape whose other extents are absurd is refused too.
bool checked_bytes(const Shape& shape, size_t itemsize, uint64_t& bytes);

}  // namespace spore::data::detail
