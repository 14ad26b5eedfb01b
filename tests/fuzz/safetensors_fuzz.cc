// libFuzzer target for the safetensors header parser and validator (src/io/safetensors_format.cc).
//
// Build and run by hand (not part of the CMake build), from the repository root:
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
//   -fno-sanitize-recover=undefined \
//     -Iinclude -Isrc tests/fuzz/safetensors_fuzz.cc src/io/safetensors_format.cc \
//     src/core/error.cc src/core/shape.cc src/core/dtype.cc -o /tmp/safetensors_fuzz
//   mkdir -p /tmp/st_corpus && cp tests/fixtures/io/*.safetensors /tmp/st_corpus/
//   /tmp/safetensors_fuzz -max_total_time=60 -max_len=4096 -dict=tests/fuzz/safetensors.dict \
//     /tmp/st_corpus
//
// Contract checked: any input either parses into a header whose tensors tile the data buffer
// exactly with byte counts matching their shapes, or throws spore::Error. Any other exception
// (escaping nlohmann::json, std::bad_alloc from a hostile size), a sanitizer report or a broken
// invariant is a crash that libFuzzer saves.
#include <cstddef>
#include <cstdint>
#include <limits>

#include "io/safetensors_format.h"
#include "spore/error.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  try {
    io::SafeTensorsHeader h = io::parse_safetensors_bytes(data, size, "fuzz");
    require(h.data_offset() + h.buffer_size == size);
    uint64_t covered = 0;
    for (const SafeTensorInfo& t : h.tensors) {
      require(t.begin <= t.end && t.end <= h.buffer_size);
      require(t.shape.ndim() <= kMaxDims);
      uint64_t numel = 1;
      for (int64_t d : t.shape) {
        require(d >= 0);
        require(!__builtin_mul_overflow(numel, (uint64_t)d, &numel));
      }
      require(numel * dtype_size(t.dtype) == t.nbytes());
      covered += t.nbytes();
      if (t.dtype == DType::kBool) {
        try {
          io::check_bool_bytes(data + h.data_offset() + t.begin, (size_t)t.nbytes(), t, "fuzz");
        } catch (const Error&) {
        }
      }
    }
    require(covered == h.buffer_size);
    for (size_t i = 1; i < h.tensors.size(); ++i)
      require(h.tensors[i - 1].name < h.tensors[i].name);
  } catch (const Error&) {
  }
  return 0;
}
