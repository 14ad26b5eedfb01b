// ONNX in (NOTE [ONNX] in docs/design.md): an ONNX model file read into Spore's own IR model, its
// nodes mapped onto registry ops, so that Lite runs it with its own executor. Part of spore_lite
// (it links protobuf and the ONNX library's generated types, never the framework). ONNX out is
// spore::export_onnx in spore/export.h (the framework side).
//
//   ir::Model m = spore::onnx::read_onnx("resnet.onnx");   // or lite::Model::build_from_file
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "spore/ir.h"

namespace spore::onnx {

// The default-domain op-set versions the importer reads (the ops it maps have the semantics of
// these versions; an older model is refused naming its version and the way out).
// Most mapped ops are read from op set 13 (And, Or, Xor and Not, unchanged since, from 7 and 1);
// an older node is kVersion naming the op and the conversion.
inline constexpr int64_t kOldestOpset = 13;
inline constexpr int64_t kNewestOpset = 28;  // ONNX 1.23: 22-28 changed only dtype lists of the mapped ops

// Reads and maps a whole ONNX file. Errors: kFormat (not a parsable ModelProto, a dangling value
// name or a cycle, a tensor whose data does not match its shape, a shape that overflows),
// kVersion (an op set newer than kNewestOpset, or a node older than Spore maps), kUnsupported (an op, attribute value,
// dtype or domain Spore does not map, naming the op and the node). Never crashes on any input.
ir::Model read_onnx(const std::filesystem::path& path);
ir::Model read_onnx_bytes(std::span<const uint8_t> bytes, const std::string& label = "<memory>");

// Whether the ONNX op type (default domain) has a mapping here; the conformance runner's filter.
bool onnx_op_mapped(const std::string& op_type);

}  // namespace spore::onnx
