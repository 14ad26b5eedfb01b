// Checkpoints of Cells (save_checkpoint, load_checkpoint, load_param_into_net): safetensors files
// (spore/format.h) with Spore's metadata. Part of the framework library, above nn.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "spore/format.h"
#include "spore/nn/cell.h"
#include "spore/tensor.h"

namespace spore {

// ---- Checkpoints (NOTE [Checkpoint format]) ----------------------------------------------------
//
// NOTE [Checkpoint format]
// A checkpoint is a plain safetensors file (NOTE [safetensors]), so other tools (Python's
// safetensors, Hugging Face) read it as it is: one tensor per named parameter, under its dotted
// name from Cell::named_parameters ("0.weight", "2.moving_mean"), in the parameter's own dtype
// (the float32 masters under to_float, NOTE [Mixed precision with to_float]), non-trainable
// parameters (BatchNorm's moving statistics) included. Dtypes and shapes are the safetensors
// header itself; the "__metadata__" adds
//   "format": "spore-checkpoint", "format_version": "1", "framework": "spore",
//   "framework_version": framework_version()
// plus whatever the caller passes as extra metadata (string to string; the keys above are
// reserved). The metadata holds nothing that changes between runs (no time stamps), so saving
// the same parameters twice gives the same bytes and the same SHA-256.
// Reading: a safetensors file without "format": "spore-checkpoint" (another tool's file, whose
// metadata may say "format": "pt") loads as it is; a spore checkpoint with a format version newer
// than kCheckpointFormatVersion is refused (kVersion) before any tensor is read, because a newer
// format may store things this reader would silently misread.
//
// NOTE [Loading parameters]
// load_param_into_net validates everything first (missing and unexpected keys, then every
// shape, then every dtype), and only when all of it checks out sets the values, so a failed load
// leaves the network exactly as it was. Each error lists every offender, not only the first.
// Each loaded tensor is copied to the device of the parameter it replaces: optimizers update
// parameters in place (the fused update ops), so sharing the caller's tensors would let training
// one network change the map it was loaded from, and any other network loaded from it.

// The framework library's version ("0.1.0"), recorded in checkpoints.
const char* framework_version();

// The checkpoint format version this build writes and the newest it reads.
inline constexpr int kCheckpointFormatVersion = 1;

// A loaded checkpoint: tensors by name and the file's metadata as it is.
struct Checkpoint {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;
  // Whether the file says it is a spore checkpoint; its format version (0 when it is not one).
  bool is_spore_checkpoint() const;
  int format_version() const;
};

// Every named parameter of `net` (NOTE [Checkpoint format]), written atomically
// (NOTE [Atomic writes]). `extra_metadata` must not use the reserved keys (kValue otherwise).
void save_checkpoint(const nn::Cell& net, const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {});
// A raw parameter dict (MindSpore's list of {"name", "data"}): names unique (kValue otherwise).
void save_checkpoint(const std::vector<std::pair<std::string, Tensor>>& params,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {});
// A map, any ordering. (A template, so that a braced list {{"w", w}} goes to the vector overload
// unambiguously.)
template <typename Compare>
void save_checkpoint(const std::map<std::string, Tensor, Compare>& params,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata = {}) {
  save_checkpoint(std::vector<std::pair<std::string, Tensor>>(params.begin(), params.end()), path,
                  extra_metadata);
}

// Reads a checkpoint (or any safetensors file). A truncated, corrupted or non-safetensors file is
// kFormat naming the file; a spore checkpoint newer than this build reads is kVersion; I/O kIO.
Checkpoint load_checkpoint(const std::filesystem::path& path, Device device = Device::cpu());

// What load_param_into_net did not match: parameters of the network the dict lacks, and names in
// the dict that no parameter has (both sorted).
struct LoadReport {
  std::vector<std::string> missing_keys;
  std::vector<std::string> unexpected_keys;
  bool complete() const { return missing_keys.empty() && unexpected_keys.empty(); }
};

// Sets the network's parameters from `params` by name (NOTE [Loading parameters]). A shape
// mismatch is kShape, a dtype mismatch kDType, each naming the parameter and both sides. With
// `strict`, missing or unexpected keys are kValue listing them all; without, they are returned.
// Nothing is modified unless the whole load succeeds.
LoadReport load_param_into_net(nn::Cell& net, const std::map<std::string, Tensor>& params,
                               bool strict = true);
inline LoadReport load_param_into_net(nn::Cell& net, const Checkpoint& ckpt, bool strict = true) {
  return load_param_into_net(net, ckpt.tensors, strict);
}

}  // namespace spore
