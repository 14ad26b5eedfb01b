// MindSpore's .ckpt checkpoints (NOTE [MindSpore checkpoints] in docs/design.md): read and write
// the protobuf file MindSpore's save_checkpoint writes, so that a MindSpore user brings trained
// parameters over (and back). Part of the framework library, next to Spore's own checkpoints
// (spore/checkpoint.h), which stay safetensors.
//
//   spore::ms::load_ms_checkpoint_into(net, "chapter5_linear.ckpt");   // by parameter name
//   spore::ms::save_ms_checkpoint(net, "out.ckpt");                    // MindSpore loads it
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "spore/checkpoint.h"
#include "spore/nn/cell.h"
#include "spore/tensor.h"

namespace spore::ms {

// A checkpoint's parameters in file order, by MindSpore's names ("fc1.weight").
using MsParams = std::vector<std::pair<std::string, Tensor>>;

// Reads a .ckpt. Errors: kFormat (not a parsable Checkpoint protobuf, e.g. an encrypted file or a
// truncated one; content that does not match its shape and dtype; a name given twice with a
// different shape or dtype), kUnsupported (a dtype Spore has none for, a MapTensor), kIO.
// A large parameter MindSpore wrote in slices (the same tag again) is joined back. Never crashes.
MsParams read_ms_checkpoint(const std::filesystem::path& path);
MsParams read_ms_checkpoint_bytes(std::span<const uint8_t> bytes, const std::string& label = "<memory>");

// The bytes MindSpore's save_checkpoint writes for these parameters (one Value per parameter, in
// this order; dims, MindSpore's dtype name, the little-endian data; a scalar without dims; an
// empty tensor left out, as MindSpore leaves it out): byte-identical to MindSpore for the same
// names, shapes, dtypes and values. kValue for an empty or repeated name,
// kUnsupported for a dtype MindSpore's checkpoints have no name for.
std::vector<uint8_t> ms_checkpoint_bytes(const MsParams& params);
// Written atomically (NOTE [Atomic writes]).
void save_ms_checkpoint(const MsParams& params, const std::filesystem::path& path);
// Every named parameter of `net` (Cell::named_parameters: MindSpore's naming).
void save_ms_checkpoint(const nn::Cell& net, const std::filesystem::path& path);

// Loads a .ckpt into `net` by parameter name with load_param_into_net's checks (NOTE [Loading
// parameters]: every shape and dtype checked before anything is set; kShape / kDType naming the
// parameter; with `strict`, missing or unexpected names are kValue listing them all).
LoadReport load_ms_checkpoint_into(nn::Cell& net, const std::filesystem::path& path, bool strict = true);

// MindSpore's dtype name in a checkpoint ("Float16") and back; kUnsupported when there is none.
std::string ms_dtype_name(DType t);
DType dtype_from_ms_name(const std::string& name, const std::string& what);

}  // namespace spore::ms
