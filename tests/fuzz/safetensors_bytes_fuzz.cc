// libFuzzer target: safetensors bytes: the header parser and validator
// (src/io/safetensors_format.cc) and load_safetensors_bytes (src/io/safetensors_reader.cc).
// Built by CMake with SPORE_FUZZ (the `fuzz` preset); run by scripts/fuzz.sh (docs/fuzzing.md),
// with tests/fuzz/safetensors.dict as its dictionary.
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
#include "spore/io.h"

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
  // The whole reader: tensors made from the bytes (bool bytes checked, metadata kept).
  try {
    SafeTensors st = load_safetensors_bytes(std::span<const uint8_t>(data, size));
    for (const auto& [name, t] : st.tensors) require(t.nbytes() <= size);
  } catch (const Error&) {
  }
  return 0;
}
