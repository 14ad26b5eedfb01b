// libFuzzer target: the ONNX importer (src/lite/onnx_import.cc): protobuf parsing, tensor data
// against shapes, names, op-set versions, the mapping of every node onto registry ops and the
// registry's shape inference, and, for graphs Lite maps at predict, that mapping with zero inputs. Built by CMake with SPORE_FUZZ (the `fuzz` preset); run by
// scripts/fuzz.sh (docs/fuzzing.md). Seeds: small valid models from tests/fixtures/onnx.
// Contract checked: any input either maps into an IR model whose values are in range, or throws
// spore::Error. Anything else is a crash that libFuzzer saves.
#include <cstddef>
#include <cstdint>
#include <map>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/onnx.h"
#include "spore/ops.h"

namespace {

// A graph mapped at predict (symbolic extents, values read from inputs, If conditions: NOTE [ONNX
// dynamic shapes]) is mapped again as predict would, with zero inputs of the declared shapes
// (each symbolic extent 3), when those are small.
void map_with_inputs(std::span<const uint8_t> bytes) {
  using namespace spore;
  std::map<std::string, Tensor> given;
  for (const ir::Value& v : onnx::onnx_signature(bytes, "fuzz").first) {
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (const ir::Dim& d : v.dims) {
      shape.push_back(d.symbolic() || d.extent < 0 ? 3 : d.extent);
      n *= std::max<int64_t>(shape.back(), 1);
      if (shape.size() > 8 || n > (1 << 16)) return;
    }
    given[v.name] = dispatch1(OpId::k_fill, {}, Attrs::of(shape, 0.0, v.dtype));
  }
  ir::Model m = onnx::read_onnx_with_inputs(bytes, "fuzz", given, nullptr);
  fuzz::require_graph_in_range(m.graph);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::span<const uint8_t> bytes(data, size);
  ir::Model m;
  try {
    m = onnx::read_onnx_bytes(bytes, "fuzz");
  } catch (const onnx::InputValueNeeded&) {
    try {
      map_with_inputs(bytes);
    } catch (const Error&) {
    }
    return 0;
  } catch (const Error&) {
    return 0;
  }
  fuzz::require_graph_in_range(m.graph);
  return 0;
}
