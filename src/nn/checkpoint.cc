// Checkpoints over safetensors: save_checkpoint, load_checkpoint and load_param_into_net
// (NOTE [Checkpoint format] and NOTE [Loading parameters] in include/spore/checkpoint.h).
#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string_view>

#include "io/posix_file.h"
#include "spore/error.h"
#include "spore/checkpoint.h"

namespace spore {
namespace {

constexpr const char* kFormatKey = "format";
constexpr const char* kFormatName = "spore-checkpoint";
constexpr const char* kVersionKey = "format_version";
constexpr const char* kFrameworkKey = "framework";
constexpr const char* kFrameworkVersionKey = "framework_version";

std::map<std::string, std::string> checkpoint_metadata(
    const std::map<std::string, std::string>& extra) {
  std::map<std::string, std::string> md = {
      {kFormatKey, kFormatName},
      {kVersionKey, std::to_string(kCheckpointFormatVersion)},
      {kFrameworkKey, "spore"},
      {kFrameworkVersionKey, framework_version()},
  };
  for (const auto& [k, v] : extra) {
    if (md.count(k))
      throw Error(ErrorCode::kValue, "save_checkpoint: the metadata key '" + k +
                                         "' is reserved for Spore's own record (format, "
                                         "format_version, framework, framework_version); "
                                         "store your value under another key");
    md.emplace(k, v);
  }
  return md;
}

// "1" -> 1; anything but a plain decimal number -> -1.
int parse_version(const std::string& s) {
  if (s.empty() || s.size() > 6) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

// A guess at what a file that is not safetensors is, from its first bytes: people hand a loader
// whatever file has the right-looking name, and "it is a zip archive" says more than "bad header".
std::string sniff(const std::filesystem::path& path) {
  std::vector<uint8_t> head(8);
  try {
    io::UniqueFd fd = io::open_for_read(path);
    head.resize(io::pread_full(fd.get(), head.data(), head.size(), 0, path));
  } catch (const Error&) {
    return "";
  }
  auto starts = [&](std::string_view magic) {
    return head.size() >= magic.size() && std::memcmp(head.data(), magic.data(), magic.size()) == 0;
  };
  if (starts("\x93NUMPY")) return " It looks like a NumPy .npy file, not safetensors.";
  if (starts("PK\x03\x04"))
    return " It looks like a zip archive (PyTorch's torch.save format?), not safetensors.";
  if (starts("GGUF")) return " It looks like a GGUF file, not safetensors.";
  if (head.empty()) return " The file is empty.";
  return "";
}

// An error's message without the "[spore format error] " that Error puts in front, for rewrapping.
std::string bare_message(const Error& e) {
  std::string m = e.what();
  const std::string tag = std::string("[spore ") + error_code_name(e.code()) + " error] ";
  return m.rfind(tag, 0) == 0 ? m.substr(tag.size()) : m;
}

std::string join_quoted(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "'" : ", '") + n + "'";
  return s;
}

}  // namespace

// ---- Checkpoint
// -----------------------------------------------------------------------------------
bool Checkpoint::is_spore_checkpoint() const {
  auto it = metadata.find(kFormatKey);
  return it != metadata.end() && it->second == kFormatName;
}

int Checkpoint::format_version() const {
  if (!is_spore_checkpoint()) return 0;
  auto it = metadata.find(kVersionKey);
  return it == metadata.end() ? 0 : parse_version(it->second);
}

// ---- saving
// ---------------------------------------------------------------------------------------
void save_checkpoint(const std::vector<std::pair<std::string, Tensor>>& params,
                     const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata) {
  save_safetensors(path, params, checkpoint_metadata(extra_metadata));
}

void save_checkpoint(const nn::Cell& net, const std::filesystem::path& path,
                     const std::map<std::string, std::string>& extra_metadata) {
  std::vector<std::pair<std::string, Tensor>> params;
  for (const auto& [name, p] : net.named_parameters()) params.emplace_back(name, p.value());
  save_checkpoint(params, path, extra_metadata);
}

// ---- loading
// --------------------------------------------------------------------------------------
Checkpoint load_checkpoint(const std::filesystem::path& path, Device device) {
  const std::string source = path.string();
  std::optional<SafeTensorsFile> file;
  try {
    file.emplace(path);  // reads and validates the header only
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kFormat) throw;
    throw Error(ErrorCode::kFormat, "load_checkpoint: " + bare_message(e) +
                                        ". The file is not a complete safetensors checkpoint "
                                        "(truncated, corrupted, or another format)." +
                                        sniff(path) +
                                        " Restore it from a backup or save it again.");
  }

  Checkpoint ckpt;
  ckpt.metadata = file->metadata();
  // The version is checked before any tensor is read: a newer format may lay them out differently.
  if (ckpt.is_spore_checkpoint()) {
    auto it = ckpt.metadata.find(kVersionKey);
    const std::string text = it == ckpt.metadata.end() ? "" : it->second;
    int version = parse_version(text);
    if (version < 1)
      throw Error(ErrorCode::kFormat, "load_checkpoint: '" + source +
                                          "' says it is a spore checkpoint but its " + kVersionKey +
                                          " is " + (text.empty() ? "missing" : "'" + text + "'") +
                                          " (expected a number); the file's metadata is corrupted");
    if (version > kCheckpointFormatVersion) {
      auto fv = ckpt.metadata.find(kFrameworkVersionKey);
      std::string writer = fv == ckpt.metadata.end() ? "a newer Spore" : "Spore " + fv->second;
      throw Error(ErrorCode::kVersion,
                  "load_checkpoint: '" + source + "' is a spore checkpoint of format version " +
                      text + ", written by " + writer + "; this Spore (" + framework_version() +
                      ") reads format versions up to " + std::to_string(kCheckpointFormatVersion) +
                      ". Upgrade Spore to read it, or have the newer Spore save it again in "
                      "format version " +
                      std::to_string(kCheckpointFormatVersion) + ".");
    }
  }
  for (const SafeTensorInfo& ti : file->tensors())
    ckpt.tensors.emplace(ti.name, file->load(ti.name, device));
  return ckpt;
}

LoadReport load_param_into_net(nn::Cell& net, const std::map<std::string, Tensor>& params,
                               bool strict) {
  const std::string who = "load_param_into_net(" + net.name() + ")";
  auto named = net.named_parameters();

  // 1. Keys.
  LoadReport report;
  std::set<std::string> net_names;
  for (const auto& [name, p] : named) {
    net_names.insert(name);
    if (!params.count(name)) report.missing_keys.push_back(name);
  }
  for (const auto& [name, t] : params)
    if (!net_names.count(name)) report.unexpected_keys.push_back(name);
  std::sort(report.missing_keys.begin(), report.missing_keys.end());
  if (strict && !report.complete()) {
    std::string msg = who + ": the parameters do not match the network.";
    if (!report.missing_keys.empty())
      msg += " Missing from the checkpoint (" + std::to_string(report.missing_keys.size()) +
             "): " + join_quoted(report.missing_keys) + ".";
    if (!report.unexpected_keys.empty())
      msg += " Unexpected, no parameter of the network has these names (" +
             std::to_string(report.unexpected_keys.size()) +
             "): " + join_quoted(report.unexpected_keys) + ".";
    msg +=
        " Check that the checkpoint was saved from this architecture, or pass strict = false "
        "to load the parameters that match and get these lists back. Nothing was loaded.";
    throw Error(ErrorCode::kValue, msg);
  }

  // 2. Shapes, then dtypes, of every matched parameter; every offender in one message.
  std::vector<std::pair<Parameter, Tensor>> plan;
  std::vector<std::string> bad_shape, bad_dtype;
  for (const auto& [name, p] : named) {
    auto it = params.find(name);
    if (it == params.end()) continue;
    const Tensor& t = it->second;
    if (!t.defined())
      throw Error(ErrorCode::kValue, who + ": the value for parameter '" + name +
                                         "' is an undefined tensor. Nothing was loaded.");
    const Tensor& cur = p.value();
    if (t.shape() != cur.shape())
      bad_shape.push_back("'" + name + "': checkpoint " + t.shape().str() + ", network " +
                          cur.shape().str());
    else if (t.dtype() != cur.dtype())
      bad_dtype.push_back("'" + name + "': checkpoint " + dtype_name(t.dtype()) + ", network " +
                          dtype_name(cur.dtype()));
    plan.emplace_back(p, t);
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : "; ") + x;
    return s;
  };
  if (!bad_shape.empty())
    throw Error(ErrorCode::kShape, who + ": shape mismatch for " +
                                       std::to_string(bad_shape.size()) +
                                       " parameter(s): " + list(bad_shape) +
                                       ". The checkpoint was saved from a network with other "
                                       "layer sizes; build the network with the sizes it was "
                                       "saved with. Nothing was loaded.");
  if (!bad_dtype.empty())
    throw Error(ErrorCode::kDType, who + ": dtype mismatch for " +
                                       std::to_string(bad_dtype.size()) +
                                       " parameter(s): " + list(bad_dtype) +
                                       ". Build the network with the dtype the checkpoint holds "
                                       "(to_float changes the compute dtype, not the stored one), "
                                       "or cast the tensors before loading. Nothing was loaded.");

  // 3. Everything checks out: copy to each parameter's device and set. Always a copy: optimizers
  // update parameters in place, which must not reach into the caller's map (or into a second
  // network loaded from the same map).
  std::vector<Tensor> values;
  values.reserve(plan.size());
  for (auto& [p, t] : plan)
    values.push_back(t.device() == p.value().device() ? t.clone() : t.to(p.value().device()).contiguous());
  for (size_t i = 0; i < plan.size(); ++i) plan[i].first.set_value(values[i]);
  return report;
}

}  // namespace spore
