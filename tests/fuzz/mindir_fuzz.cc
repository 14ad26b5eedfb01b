// libFuzzer target: the MindIR importer (src/lite/mindir_import.cc): protobuf parsing, the
// version check, parameter data against shapes, value names, primitive references, the mapping of
// every node onto registry ops and the registry's shape inference. Built by CMake with SPORE_FUZZ
// (the `fuzz` preset); run by scripts/fuzz.sh (docs/fuzzing.md). Seeds: MindSpore 2.10's own
// exports from tests/fixtures/mindir.
// Contract checked: any input either maps into an IR model whose values are in range, or throws
// spore::Error. Anything else is a crash that libFuzzer saves.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/mindir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  ir::Model m;
  try {
    m = mindir::read_mindir_bytes(std::span<const uint8_t>(data, size), "fuzz");
  } catch (const Error&) {
    return 0;
  }
  fuzz::require_graph_in_range(m.graph);
  return 0;
}
