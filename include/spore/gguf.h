// GGUF, llama.cpp's model file (NOTE [GGUF reader] in docs/design.md): a header of typed
// key-value metadata and tensor infos, then the tensor data, aligned. GgufFile maps the file
// read-only and validates the whole header before anything uses it: a hostile file gives kFormat
// naming the file and the key or tensor (kVersion for a GGUF version this reader does not know),
// never a crash; counts are checked against the bytes left before anything is allocated, so
// memory stays within a fixed multiple of the header's size (one GgufValue per array element).
// Tensor data are zero-copy views into the mapping, which lives as long as the GgufFile or any
// tensor viewing it.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "spore/quant.h"
#include "spore/tensor.h"

namespace spore {

// The metadata value types of the format (numbering as in the file).
enum class GgufType : uint32_t {
  kUInt8 = 0, kInt8 = 1, kUInt16 = 2, kInt16 = 3, kUInt32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUInt64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* gguf_type_name(GgufType type);

// A metadata value. Integers of every width are held as int64/uint64 (by signedness), floats as
// double; an array holds its element type and its elements (arrays may nest).
struct GgufValue {
  GgufType type = GgufType::kUInt8;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> value;
  GgufType element_type = GgufType::kUInt8;  // for kArray

  bool is_integer() const;
  bool is_array() const { return type == GgufType::kArray; }
};

// Tensor element types: GgmlType and its row in the one table of quantization types
// (include/spore/quant.h: names, block sizes, bytes per block).

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> dims;  // as in the file: ne[0] (fastest-varying) first
  uint64_t offset = 0;         // relative to the data section, aligned
  uint64_t nbytes = 0;
  uint64_t numel() const;
};

class GgufFile {
 public:
  explicit GgufFile(const std::filesystem::path& path);
  // Bytes already in memory (copied into an owned buffer); `source` names them in messages.
  static GgufFile from_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

  const std::string& source() const;
  uint32_t version() const;
  uint64_t alignment() const;
  uint64_t data_offset() const;  // where the data section starts in the file

  const std::map<std::string, GgufValue, std::less<>>& metadata() const;
  bool contains(std::string_view key) const;
  // nullptr when absent.
  const GgufValue* find(std::string_view key) const;
  // Typed reads: kFormat naming the key (and what it holds) when absent or of another type.
  const GgufValue& at(std::string_view key) const;
  std::string get_string(std::string_view key) const;
  int64_t get_int(std::string_view key) const;  // any integer type that fits int64
  double get_float(std::string_view key) const;
  bool get_bool(std::string_view key) const;
  std::vector<std::string> get_strings(std::string_view key) const;  // array of strings
  std::vector<int64_t> get_ints(std::string_view key) const;         // array of integers
  std::vector<double> get_floats(std::string_view key) const;        // array of float32/64

  const std::vector<GgufTensorInfo>& tensors() const;
  // kIndex naming the tensor when absent.
  const GgufTensorInfo& tensor_info(std::string_view name) const;
  // The tensor's bytes in the mapping (valid while this GgufFile or a tensor view lives).
  std::span<const uint8_t> tensor_bytes(std::string_view name) const;
  // A zero-copy tensor over the mapping: F32/F16/BF16/F64/I8/I32/I64 as that dtype with the
  // shape reversed to row-major (ne[n-1], ..., ne[0]); other (quantized) types as 1-D uint8 bytes.
  Tensor tensor(std::string_view name) const;

  struct Impl;

 private:
  explicit GgufFile(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace spore
