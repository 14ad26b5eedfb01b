// libFuzzer target: the ONNX importer (src/lite/onnx_import.cc): protobuf parsing, tensor data
// against shapes, names, op-set versions, the mapping of every node onto registry ops and the
// registry's shape inference. Built by CMake with SPORE_FUZZ (the `fuzz` preset); run by
// scripts/fuzz.sh (docs/fuzzing.md). Seeds: small valid models from tests/fixtures/onnx.
// Contract checked: any input either maps into an IR model whose values are in range, or throws
// spore::Error. Anything else is a crash that libFuzzer saves.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  ir::Model m;
  try {
    m = onnx::read_onnx_bytes(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const Error&) {
    return 0;
  }
  fuzz::require_graph_in_range(m.graph);
  return 0;
}
