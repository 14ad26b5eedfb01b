// ONNX in (NOTE [ONNX] in docs/design.md): an ONNX model file read into Spore's own IR model, its
// nodes mapped onto registry ops, so that Lite runs it with its own executor. Part of spore_lite
// (it links protobuf and the ONNX library's generated types, never the framework). ONNX out is
// spore::export_onnx in spore/export.h (the framework side).
//
//   ir::Model m = spore::onnx::read_onnx("resnet.onnx");   // or lite::Model::build_from_file
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spore/error.h"
#include "spore/ir.h"

namespace spore::onnx {

// The default-domain op-set versions the importer reads: every mapped op in each version the
// spec defines between these (attribute or input forms of Split, Squeeze, Pad, Clip, Slice,
// ReduceX; Upsample; NOTE [ONNX op sets]). Op sets before 7 broadcast only with a `broadcast`
// attribute: such a model is kVersion naming the conversion.
inline constexpr int64_t kOldestOpset = 7;
inline constexpr int64_t kNewestOpset = 28;  // ONNX 1.23: 22-28 changed only dtype lists of the mapped ops

// Reads and maps a whole ONNX file. Errors: kFormat (not a parsable ModelProto, a dangling value
// name or a cycle, a tensor whose data does not match its shape, a shape that overflows),
// kVersion (an op set newer than kNewestOpset, or a node older than Spore maps), kUnsupported (an op, attribute value,
// dtype or domain Spore does not map, naming the op and the node). Never crashes on any input.
ir::Model read_onnx(const std::filesystem::path& path);
ir::Model read_onnx_bytes(std::span<const uint8_t> bytes, const std::string& label = "<memory>");

// Thrown by read_onnx when the mapping needs the value of a graph input (the axes, a Reshape's
// shape or Slice's starts given as an input rather than an initializer). Lite then maps the graph
// at predict, with the inputs given (read_onnx_with_inputs), again whenever their shapes or those
// values change.
class InputValueNeeded : public Error {
 public:
  InputValueNeeded(std::string input, const std::string& message)
      : Error(ErrorCode::kUnsupported, message), input_(std::move(input)) {}
  const std::string& input() const { return input_; }

 private:
  std::string input_;
};

// Maps with every graph input given: their shapes are fixed and their values available to the
// mapping. `used` receives the names of the inputs whose values the mapping read.
ir::Model read_onnx_with_inputs(std::span<const uint8_t> bytes, const std::string& label,
                                const std::map<std::string, Tensor>& inputs, std::vector<std::string>* used);

// The graph's inputs and outputs (names, dtypes, dimensions) as declared, without mapping;
// `carried_outputs` (when given) receives each output's carried ONNX type name, "" where Spore has
// the type itself (NOTE [ONNX carried types]).
std::pair<std::vector<ir::Value>, std::vector<ir::Value>> onnx_signature(std::span<const uint8_t> bytes,
                                                                         const std::string& label,
                                                                         std::vector<std::string>* carried_outputs = nullptr);

// The metadata key under which a mapped model records output k's carried ONNX type ("uint16"):
// outputs of such types come back in their carrier dtype (NOTE [ONNX carried types]).
std::string carried_output_key(size_t k);

// Whether the ONNX op type has a mapping here: "Conv" for the default domain, "domain/op" for
// another ("com.microsoft/DynamicQuantizeLSTM"); the conformance runner's filter.
bool onnx_op_mapped(const std::string& op_type);

}  // namespace spore::onnx
