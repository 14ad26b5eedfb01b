// libFuzzer target: the model IR reader (src/io/ir_reader.cc, src/io/ir_model.cc).
// Built by CMake with SPORE_FUZZ (the `fuzz` preset); run by scripts/fuzz.sh (docs/fuzzing.md).
//
// The file's trailing SHA-256 would stop almost every mutation at the checksum, so byte 0 picks
// the mode: odd, the rest is a file body that the target seals with its correct checksum (so the
// fuzzer explores the sizes, the FlatBuffer and the graph checks); even, the rest is read as is.
// Contract checked: any input either reads into a model that writes back and reads again to the
// same graph, or throws spore::Error. Anything else is a crash that libFuzzer saves.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/ir.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  if (size == 0) return 0;
  std::vector<uint8_t> file(data + 1, data + size);
  if (data[0] & 1) {
    const std::string hex = sha256_bytes(std::span<const uint8_t>(file.data(), file.size()));
    for (int i = 0; i < 32; ++i) file.push_back((uint8_t)std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  ir::Model m;
  try {
    m = ir::read_model_bytes(file, "fuzz");
  } catch (const Error&) {
    return 0;
  }
  // What the reader accepts, the writer writes and the reader reads again, unchanged.
  const std::vector<uint8_t> again = ir::model_to_bytes(m, {m.ir_version});
  const ir::Model back = ir::read_model_bytes(again, "fuzz-again");
  require(back.graph.nodes.size() == m.graph.nodes.size());
  require(back.graph.values.size() == m.graph.values.size());
  for (size_t i = 0; i < m.graph.values.size(); ++i)
    if (m.graph.values[i].data.defined()) require(back.graph.values[i].data.to_bytes() == m.graph.values[i].data.to_bytes());
  return 0;
}
