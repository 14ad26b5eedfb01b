// The format library (spore_format, NOTE [Format library]): file formats and the file plumbing
// under them, below the framework: SHA-256 digests, crash-safe (atomic) writes, safetensors (the
// tensor format of Hugging Face checkpoints) and read-only memory-mapped files. It depends on the
// core only (tensors), so Lite and the LLM engine link it without nn, autograd, optim or data.
// Checkpoints of Cells are in spore/checkpoint.h, above nn.
//
// NOTE [Atomic writes]
// Every artifact Spore writes (checkpoints, IR files, reports) goes through atomic_write_file: the
// bytes go to a temporary file in the target's directory (".<name>.tmp.<pid>.<random>"), which is
// fsync'ed and then renamed over the target, after which the directory is fsync'ed too. rename(2)
// within one directory is atomic, so a reader (or a process restarted after a crash) sees either
// the complete old file or the complete new one, never a truncated file under the real name. A
// crash (SIGKILL, power loss) can leave the temporary file behind; it never has the target's name.
//
// NOTE [safetensors]
// Layout: 8-byte little-endian header length N, N bytes of JSON, then the data buffer:
//   {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}}
// Offsets are relative to the start of the buffer; tensors are row-major, little-endian, and must
// tile the buffer exactly (no gaps, no overlaps, nothing after the last one). The reader validates
// all of it before it allocates anything, so a hostile file gives a kFormat error naming the file
// and the tensor, never a crash or a huge allocation. Spore's writer follows the reference writer:
// keys
// "__metadata__" first, then tensors; data ordered by dtype width (widest first) then name, so that
// every tensor is aligned to its element size; the header padded with spaces to a multiple of 8.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spore/device.h"
#include "spore/dtype.h"
#include "spore/shape.h"
#include "spore/tensor.h"

namespace spore {

// ---- SHA-256 ------------------------------------------------------------------------------------
// Lowercase hex digests (64 characters), computed with OpenSSL's EVP interface.
std::string sha256_bytes(std::span<const uint8_t> bytes);
std::string sha256_bytes(std::string_view bytes);
std::string sha256_file(const std::filesystem::path& path);  // throws kIO naming the path

// Incremental digest, for hashing data while it is written or streamed.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(Sha256&&) noexcept;
  Sha256& operator=(Sha256&&) noexcept;
  void update(const void* data, size_t bytes);
  void update(std::span<const uint8_t> bytes) { update(bytes.data(), bytes.size()); }
  // The digest of everything so far; the object is then reset to hash a new message.
  std::string hex_digest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- Files --------------------------------------------------------------------------------------
// Where an atomic write sends its bytes. Writes are buffered; errors throw kIO naming the file.
class FileSink {
 public:
  virtual ~FileSink() = default;
  virtual void write(const void* data, size_t bytes) = 0;
  void write(std::span<const uint8_t> bytes) { write(bytes.data(), bytes.size()); }
  void write(std::string_view bytes) { write(bytes.data(), bytes.size()); }
  // Hands the buffered bytes to the operating system (no fsync: the final commit does that).
  virtual void flush() = 0;
  virtual uint64_t bytes_written() const = 0;
};

// Replaces `path` with new contents (NOTE [Atomic writes]). On any failure the temporary file is
// removed, the old file (if any) is left as it was, and kIO is thrown naming the path and the
// system's reason. An exception thrown by `writer` is rethrown as it is, after the same cleanup.
void atomic_write_file(const std::filesystem::path& path, std::span<const uint8_t> bytes);
void atomic_write_file(const std::filesystem::path& path,
                       const std::function<void(FileSink&)>& writer);

// Whole-file read; throws kIO naming the path.
std::vector<uint8_t> read_file_bytes(const std::filesystem::path& path);

// ---- safetensors (NOTE [safetensors]) -----------------------------------------------------------
// "F32" <-> kFloat32, ...: the nine dtype codes Spore reads and writes.
const char* safetensors_dtype_code(DType dtype);

// One entry of the header, validated.
struct SafeTensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  uint64_t begin = 0;  // byte offsets relative to the data buffer
  uint64_t end = 0;
  uint64_t nbytes() const { return end - begin; }
};

// A whole file in memory: tensors by name (sorted) and the free-form metadata.
struct SafeTensors {
  std::map<std::string, Tensor, std::less<>> tensors;
  std::map<std::string, std::string> metadata;
  bool contains(std::string_view name) const { return tensors.find(name) != tensors.end(); }
  // Throws kIndex naming the tensor and a few of the names that exist.
  const Tensor& at(std::string_view name) const;
};

// Reads and validates a whole file (every error kFormat naming the file and the tensor; an unknown
// or unsupported dtype code kDType; more than kMaxDims dimensions kUnsupported; I/O kIO).
SafeTensors load_safetensors(const std::filesystem::path& path, Device device = Device::cpu());
// The same from bytes already in memory; `source` names them in error messages.
SafeTensors load_safetensors_bytes(std::span<const uint8_t> bytes,
                                   std::string_view source = "<memory>",
                                   Device device = Device::cpu());

// Lazy access for files too big to load at once (LLM weights): opening reads and validates only the
// header; load() reads one tensor with positioned reads. Copies share the open file; load() may be
// called from several threads at once.
class SafeTensorsFile {
 public:
  explicit SafeTensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const;
  const std::vector<SafeTensorInfo>& tensors() const;  // sorted by name
  const std::map<std::string, std::string>& metadata() const;
  bool contains(std::string_view name) const;
  const SafeTensorInfo& info(std::string_view name) const;  // throws kIndex
  uint64_t data_offset() const;  // file offset of the data buffer (8 + header length)
  uint64_t file_size() const;
  Tensor load(std::string_view name, Device device = Device::cpu()) const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

// Writes a file atomically (NOTE [Atomic writes]). Tensors may be on any device and non-contiguous.
// Names must be unique and not "__metadata__" (kValue otherwise). (One container type only, so that
// a braced list {{"w", w}, {"b", b}} is not ambiguous; pass a map as {m.begin(), m.end()}.)
void save_safetensors(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// The bytes save_safetensors would write.
std::vector<uint8_t> safetensors_to_bytes(
    const std::vector<std::pair<std::string, Tensor>>& tensors,
    const std::map<std::string, std::string>& metadata = {});

// ---- Memory-mapped files (NOTE [External storage] in spore/tensor.h) ---------------------------
// The whole file mapped read-only, as a 1-D uint8 tensor on the CPU viewing the mapping without a
// copy. The mapping outlives the file descriptor (closed before this returns) and stays until the
// last tensor viewing it is freed; ops that would write into it fail with kValue. Throws kIO
// naming the path when the file cannot be opened or mapped.
Tensor map_file(const std::filesystem::path& path);
// A typed, contiguous view of `shape` into `bytes` (a uint8 tensor such as map_file's) starting
// at `byte_offset`, without a copy; kIndex when it does not fit, kValue when `byte_offset` is not a
// multiple of the dtype's size.
Tensor view_bytes(const Tensor& bytes, uint64_t byte_offset, const Shape& shape, DType dtype);

}  // namespace spore
