// Loading an adapter for a model (include/spore/nlp/lora.h, NOTE [LoRA adapters]): which format
// a path is, and the command line's PATH[:SCALE].
#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "nlp/lora/lora_files.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/lora.h"

namespace spore::nlp {

const char* lora_projection_name(LoraProjection p) {
  static const char* const kNames[] = {"q", "k", "v", "o", "gate", "up", "down", "qkv", "gate_up"};
  const auto i = static_cast<size_t>(p);
  return i < std::size(kNames) ? kNames[i] : "?";
}

namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "cannot read " + path.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LoraAdapter load_peft(const std::filesystem::path& dir, const ModelConfig& c, bool gguf_base) {
  const auto config_path = dir / "adapter_config.json", weights = dir / "adapter_model.safetensors";
  std::error_code ec;
  if (!std::filesystem::exists(config_path, ec))
    throw Error(ErrorCode::kFormat, dir.string() + ": no adapter_config.json; a LoRA adapter is a PEFT directory "
                                                   "(adapter_config.json + adapter_model.safetensors) or a GGUF file");
  if (!std::filesystem::exists(weights, ec))
    throw Error(ErrorCode::kFormat, dir.string() + ": no adapter_model.safetensors" +
                                        (std::filesystem::exists(dir / "adapter_model.bin", ec)
                                             ? std::string(" (adapter_model.bin, a pickle, is not read: save the "
                                                           "adapter with safe_serialization=True)")
                                             : std::string()));
  const lora::PeftConfig cfg = lora::parse_peft_config(read_text(config_path), config_path.string());
  lora::RawAdapter raw = lora::read_peft_tensors(cfg, load_safetensors(weights), weights.string());
  return lora::bind_adapter(std::move(raw), cfg.target_modules, c, gguf_base);
}

}  // namespace

namespace lora {

LoraAdapter load_adapter(const std::filesystem::path& path, const ModelConfig& c, bool gguf_base) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw Error(ErrorCode::kIO, path.string() + ": no such adapter file or directory");
  if (std::filesystem::is_directory(path, ec)) return load_peft(path, c, gguf_base);
  if (path.filename() == "adapter_config.json") return load_peft(path.parent_path(), c, gguf_base);
  const GgufFile g(path);
  return bind_adapter(read_gguf_adapter(g), {}, c, gguf_base);
}

}  // namespace lora

std::shared_ptr<const LoraAdapter> load_lora(const std::filesystem::path& path, const LoadedModel& base) {
  if (!base.lm) throw Error(ErrorCode::kValue, "load_lora: the model is not loaded");
  LoraAdapter a = lora::load_adapter(path, base.lm->config(), base.format == "gguf");
  static std::atomic<uint64_t> next_serial{1};
  a.path = path;
  a.model = base.lm.get();
  a.serial = next_serial++;
  return std::make_shared<const LoraAdapter>(std::move(a));
}

std::pair<std::filesystem::path, double> parse_lora_argument(const std::string& arg) {
  if (arg.empty()) throw Error(ErrorCode::kValue, "--lora: give an adapter path (PATH or PATH:SCALE)");
  const auto colon = arg.rfind(':');
  if (colon == std::string::npos) return {arg, 1.0};
  const std::string tail = arg.substr(colon + 1);
  double scale = 0;
  const char* end = tail.data() + tail.size();
  const auto [ptr, err] = std::from_chars(tail.data(), end, scale);
  if (tail.empty() || ptr != end || err != std::errc()) {
    // Not a number after the colon: a path that holds a colon, unless nothing follows it.
    if (tail.empty()) throw Error(ErrorCode::kValue, "--lora " + arg + ": no scale after ':' (PATH:SCALE, e.g. :0.5)");
    return {arg, 1.0};
  }
  if (!std::isfinite(scale)) throw Error(ErrorCode::kValue, "--lora " + arg + ": the scale must be a finite number");
  if (colon == 0) throw Error(ErrorCode::kValue, "--lora " + arg + ": no adapter path before the scale");
  return {arg.substr(0, colon), scale};
}

std::string lora_key(const std::vector<LoraUse>& uses) {
  std::string key;
  for (const LoraUse& u : uses) {
    if (!u.adapter || u.scale == 0) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%llu*%.17g;", static_cast<unsigned long long>(u.adapter->serial), u.scale);
    key += buf;
  }
  return key;
}

}  // namespace spore::nlp
