// File formats and the file plumbing under them: SHA-256 digests, crash-safe (atomic) writes,
// safetensors (the tensor format of Hugging Face checkpoints) and Spore's checkpoints on top of it
// (save_checkpoint, load_checkpoint, load_param_into_net).
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
#include "spore/nn/cell.h"
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

// ---- Checkpoints (NOTE [Checkpoint format]) ----------------------------------------------------
//
// NOTE [Checkpoint format]
// A checkpoint is a plain safetensors file (NOTE [safetensors]), so other tools (Python's
// safetensors, Hugging Face) read it as it is: one tensor per named parameter, under its dotted
// name from Cell::named_parameters ("0.weight", "2.moving_mean"), in the parameter's own dtype
// (the float32 masters under to_float, NOTE [Mixed precision with to_float]), non-trainable
// parameters (BatchNorm's moving statistics) included. Dtypes and shapes are the safetensors
// header itself; the "__metadata__" adds
//   "format": "spore-checkpoint", "format_version": "1", "framework": "spore",
//   "framework_version": framework_version()
// plus whatever the caller passes as extra metadata (string to string; the keys above are
// reserved). The metadata holds nothing that changes between runs (no time stamps), so saving
// the same parameters twice gives the same bytes and the same SHA-256.
// Reading: a safetensors file without "format": "spore-checkpoint" (another tool's file, whose
// metadata may say "format": "pt") loads as it is; a spore checkpoint with a format version newer
// than kCheckpointFormatVersion is refused (kVersion) before any tensor is read, because a newer
// format may store things this reader would silently misread.
//
// NOTE [Loading parameters]
// load_param_into_net validates everything first (missing and unexpected keys, then every
// shape, then every dtype), and only when all of it checks out sets the values, so a failed load
// leaves the network exactly as it was. Each error lists every offender, not only the first.
// Each loaded tensor is copied to the device of the parameter it replaces: optimizers update
// parameters in place (the fused update ops), so sharing the caller's tensors would let training
// one network change the map it was loaded from, and any other network loaded from it.

// The framework library's version ("0.1.0"), recorded in checkpoints.
const char* framework_version();

// The checkpoint format version this build writes and the newest it reads.
inline constexpr int kCheckpointFormatVersion = 1;

// A loaded checkpoint: tensors by name and the file's metadata as it is.
struct Checkpoint {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
  // Whether the file says it is a spore checkpoint; its format version (0 when it is not one).
  bool is_spore_checkpoint() const;
  int format_version() const;
};

// Every named parameter of `net` (NOTE [Checkpoint format]), written atomically
// (NOTE [Atomic writes]). `extra_metadata` must not use the reserved keys (kValue otherwise).
void save_checkpoint(const nn::Cell& net, const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {});
// A raw parameter dict (MindSpore's list of {"name", "data"}): names unique (kValue otherwise).
void save_checkpoint(const std::vector<std::pair<std::string, Tensor>>& params,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {});
// A map, any ordering. (A template, so that a braced list {{"w", w}} goes to the vector overload
// unambiguously.)
template <typename Compare>
void save_checkpoint(const std::map<std::string, Tensor, Compare>& params,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {}) {
  save_checkpoint(std::vector<std::pair<std::string, Tensor>>(params.begin(), params.end()), path,
                  extra_metadata);
}

// Reads a checkpoint (or any safetensors file). A truncated, corrupted or non-safetensors file is
// kFormat naming the file; a spore checkpoint newer than this build reads is kVersion; I/O kIO.
Checkpoint load_checkpoint(const std::filesystem::path& path, Device device = Device::cpu());

// What load_param_into_net did not match: parameters of the network the dict lacks, and names in
// the dict that no parameter has (both sorted).
struct LoadReport {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  bool complete() const { return missing_keys.empty() && unexpected_keys.empty(); }
};

// Sets the network's parameters from `params` by name (NOTE [Loading parameters]). A shape
// mismatch is kShape, a dtype mismatch kDType, each naming the parameter and both sides. With
// `strict`, missing or unexpected keys are kValue listing them all; without, they are returned.
// Nothing is modified unless the whole load succeeds.
LoadReport load_param_into_net(nn::Cell& net, const std::map<std::string, Tensor>& params,
                               bool strict = true);
inline LoadReport load_param_into_net(nn::Cell& net, const Checkpoint& ckpt, bool strict = true) {
  return load_param_into_net(net, ckpt.tensors, strict);
}

}  // namespace spore
