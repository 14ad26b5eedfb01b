// Writes GGUF version 3 files (NOTE [GGUF writer] in docs/design.md), the reader's counterpart in
// the format library (core only). Metadata keys and tensors are written in the order they were
// added, as llama.cpp's gguf-py writer does; the header is padded to the alignment
// (general.alignment, 32 unless set), every tensor's data starts at an aligned offset and is padded
// to the next one. The file is written atomically (NOTE [Atomic writes]): a reader never sees a
// half-written model under the target's name.
//
// Tensor data can be given as bytes or as a producer that writes them when the file is written, so
// a converter streams one tensor at a time instead of holding a whole model in memory.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "spore/format.h"
#include "spore/gguf.h"

namespace spore {

// Metadata values of a given GGUF type (GgufValue holds every integer as int64/uint64, floats as
// double). The writer checks that the value fits its declared type (kValue naming the key).
GgufValue gguf_uint(GgufType type, uint64_t v);  // kUInt8/16/32/64
GgufValue gguf_int(GgufType type, int64_t v);    // kInt8/16/32/64
GgufValue gguf_float(GgufType type, double v);   // kFloat32/64
GgufValue gguf_bool(bool v);
GgufValue gguf_string(std::string v);
GgufValue gguf_array(GgufType element_type, std::vector<GgufValue> items);
GgufValue gguf_strings(const std::vector<std::string>& items);
GgufValue gguf_int32s(const std::vector<int32_t>& items);
GgufValue gguf_float32s(const std::vector<float>& items);

class GgufWriter {
 public:
  GgufWriter() = default;

  // Adds a key; kValue when the key is already there, or the value does not fit its type.
  void set(std::string key, GgufValue value);
  void set_string(std::string key, std::string v) { set(std::move(key), gguf_string(std::move(v))); }
  void set_u32(std::string key, uint32_t v) { set(std::move(key), gguf_uint(GgufType::kUInt32, v)); }
  void set_i32(std::string key, int32_t v) { set(std::move(key), gguf_int(GgufType::kInt32, v)); }
  void set_u64(std::string key, uint64_t v) { set(std::move(key), gguf_uint(GgufType::kUInt64, v)); }
  void set_f32(std::string key, float v) { set(std::move(key), gguf_float(GgufType::kFloat32, v)); }
  void set_bool(std::string key, bool v) { set(std::move(key), gguf_bool(v)); }
  bool contains(std::string_view key) const;
  // general.alignment (a power of two); written as the uint32 key the reader expects.
  void set_alignment(uint32_t alignment);
  uint64_t alignment() const { return alignment_; }

  // A tensor of ggml type `type` with dims in GGUF order (ne[0], the fastest-varying, first: a
  // row-major [rows, cols] matrix is {cols, rows}). kValue for a duplicate name, more than 4
  // dimensions, or ne[0] not a multiple of the type's block size.
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims, std::vector<uint8_t> bytes);
  // The same with the bytes written later by `producer`, which must write exactly nbytes (the
  // type's size of dims); kInternal naming the tensor otherwise.
  void add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                  std::function<void(FileSink&)> producer);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file atomically; producers run in the order the tensors were added.
  void write(const std::filesystem::path& path) const;
  // The same bytes in memory (tests, small files).
  std::vector<uint8_t> to_bytes() const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t nbytes = 0, offset = 0;
    std::function<void(FileSink&)> producer;
  };
  void write_to(FileSink& sink) const;
  std::vector<std::pair<std::string, GgufValue>> kv_;
  std::vector<Tensor> tensors_;
  uint64_t alignment_ = 32, data_size_ = 0;
};

// Bytes of a tensor of `type` with GGUF dims (throws kValue when ne[0] does not fill whole blocks).
uint64_t ggml_tensor_bytes(GgmlType type, const std::vector<uint64_t>& dims);

}  // namespace spore
