// MindIR in (NOTE [MindIR] in docs/design.md): a file exported by MindSpore
// (`ms.export(net, x, file_format="MINDIR")`) read into Spore's own IR model, its primitives mapped
// onto registry ops, so that Lite runs it with its own executor (ModelType::kMindIR). Part of
// spore_lite: protobuf and Spore's own mind_ir.proto (proto/mindspore/), never the framework.
//
//   ir::Model m = spore::mindir::read_mindir("net.mindir");   // or lite::Model::build_from_file
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>

#include "spore/ir.h"

namespace spore::mindir {

// The mind_ir_version values this reader reads: 1 (MindSpore 2.0), 2 (2.4: primitive functions,
// whose arguments are Constant inputs) and 3 (2.10: the scalar graph holder, unused by static
// graphs). A newer file is kVersion naming its version, these, and the ways out.
inline constexpr int64_t kOldestVersion = 1;
inline constexpr int64_t kNewestVersion = 3;

// Reads and maps a whole MindIR file. Errors: kVersion (mind_ir_version outside 1..3, checked
// before anything else is looked at), kFormat (not a parsable ModelProto, a dangling or repeated
// value name, tensor data that does not match its shape, a shape that overflows, an output whose
// declared shape differs from the mapped one), kUnsupported (a primitive, attribute value, dtype or
// feature Spore does not map, naming the node and the primitive). Never crashes on any input.
ir::Model read_mindir(const std::filesystem::path& path);
ir::Model read_mindir_bytes(std::span<const uint8_t> bytes, const std::string& label = "<memory>");

// Whether the bytes are a MindIR ModelProto (parses, and names MindSpore as producer or carries a
// mind_ir_version and a graph): Lite's detection by content, for files not named *.mindir.
bool looks_like_mindir(std::span<const uint8_t> bytes);

}  // namespace spore::mindir
