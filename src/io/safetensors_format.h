// The safetensors header (NOTE [safetensors] in include/spore/format.h): parsing with a strict
// validator, and building the header the writer emits. Works on bytes only (no tensors, no files),
// so the fuzz target (tests/fuzz/safetensors_fuzz.cc) links it with just the error, dtype and shape
// code.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "spore/format.h"

namespace spore::io {

// The reference implementation refuses headers above 100 MB; so does Spore (a header that big is
// an attack or a corrupt length, and refusing it bounds the memory a hostile file can make us use).
inline constexpr uint64_t kSafeTensorsMaxHeader = 100'000'000;

struct SafeTensorsHeader {
  std::vector<SafeTensorInfo> tensors;  // sorted by name
  std::map<std::string, std::string> metadata;
  uint64_t header_length = 0;  // N: the JSON's length in bytes
  uint64_t buffer_size = 0;    // bytes after the header
  uint64_t data_offset() const { return 8 + header_length; }
};

// Checks the 8-byte length prefix of a file of `file_size` bytes and returns N (kFormat otherwise).
uint64_t safetensors_header_length(const uint8_t prefix[8], uint64_t file_size,
                                   std::string_view source);
// Validates the JSON header of a file whose data buffer holds `buffer_size` bytes.
SafeTensorsHeader parse_safetensors_header(std::string_view json, uint64_t header_length,
                                           uint64_t buffer_size, std::string_view source);
// Both steps over a whole file in memory.
SafeTensorsHeader parse_safetensors_bytes(const uint8_t* data, size_t size,
                                          std::string_view source);
// safetensors BOOL elements must be bytes 0 or 1 (any other byte read as a C++ bool is undefined
// behaviour); kFormat naming the tensor and the element otherwise.
void check_bool_bytes(const uint8_t* data, size_t n, const SafeTensorInfo& info,
                      std::string_view source);

// Writer side: entries in data order with offsets filled in, metadata; returns the JSON padded with
// spaces so that 8 + its length is a multiple of 8. Throws kValue for names that are not UTF-8.
std::string build_safetensors_header(const std::vector<SafeTensorInfo>& entries,
                                     const std::map<std::string, std::string>& metadata);
// Order of the reference writer: wider dtypes first, then by name (keeps tensors aligned).
bool safetensors_data_order(const SafeTensorInfo& a, const SafeTensorInfo& b);

}  // namespace spore::io
