// `spore merge` from a Hugging Face base to a folder (NOTE [LoRA merge]): one model.safetensors with
// the updated weights (in the requested dtype or each in its own), config.json's dtype set to
// match, and the base's other files - tokenizer, chat template, generation config - copied as they
// are. Not copied: the base's weights (shards and index: the output is one file), pickled weights,
// GGUF files and the artifact lock (spore.lock.json pins the base's bytes, not these).
#include <nlohmann/json.hpp>

#include <set>

#include "nlp/finetune/lora_merge_internal.h"
#include "nlp/model_internal.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/ops.h"

namespace spore::nlp::merge {

namespace fs = std::filesystem;

namespace {

// Whether a file of the base folder is a copy of the base's weights or its lock, not carried over.
bool is_weights_or_lock(const std::string& name) {
  const auto ends = [&](const std::string& tail) {
    return name.size() >= tail.size() && name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  return ends(".safetensors") || ends(".bin") || ends(".pt") || ends(".pth") || ends(".gguf") ||
         name == "model.safetensors.index.json" || name == "spore.lock.json";
}

const char* dtype_word(DType d) {
  return d == DType::kFloat16 ? "float16" : d == DType::kBFloat16 ? "bfloat16" : "float32";
}

std::vector<std::string> weight_files(const fs::path& dir) {
  const fs::path index = dir / "model.safetensors.index.json";
  std::error_code ec;
  if (!fs::exists(index, ec)) return {"model.safetensors"};
  const std::vector<uint8_t> bytes = read_file_bytes(index);
  std::set<std::string> uniq;
  for (const auto& [name, file] : parse_safetensors_index(std::string(bytes.begin(), bytes.end()), index.string()))
    uniq.insert(file);
  return {uniq.begin(), uniq.end()};
}

}  // namespace

DType write_hf_dir(const fs::path& base, const Plan& plan, const fs::path& dir, std::optional<DType> dtype,
                   MergeReport& report) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::set<DType> floating;
  for (const std::string& f : weight_files(base)) {
    const SafeTensorsFile file(base / f);
    for (const SafeTensorInfo& info : file.tensors()) {
      Tensor t = file.load(info.name);
      const bool is_float = is_floating(t.dtype());
      if (is_float) floating.insert(t.dtype());
      const DType to = is_float && dtype ? *dtype : t.dtype();
      const auto found = plan.updates.find(info.name);
      if (found != plan.updates.end()) {
        std::vector<float> w = cast(t, DType::kFloat32).contiguous().to_vector<float>();
        apply_updates(info.name, w, t.size(0), t.size(1), found->second);
        t = Tensor::from_vector(w, t.shape());
        ++report.merged_tensors;
      }
      if (t.dtype() != to) t = cast(t, to);
      tensors.emplace_back(info.name, std::move(t));
    }
  }
  report.tensors = (int64_t)tensors.size();
  save_safetensors(dir / "model.safetensors", tensors, {{"format", "pt"}});
  tensors.clear();

  for (const auto& e : fs::directory_iterator(base)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || is_weights_or_lock(name)) continue;
    if (name == "config.json" && dtype) {
      // transformers 5 reads "dtype", 4 "torch_dtype": the one the base has (or both) follows.
      const auto bytes = read_file_bytes(e.path());
      nlohmann::ordered_json c = nlohmann::ordered_json::parse(bytes.begin(), bytes.end(), nullptr, false);
      if (c.is_object()) {
        bool set = false;
        for (const char* key : {"dtype", "torch_dtype"})
          if (c.contains(key)) c[key] = dtype_word(*dtype), set = true;
        if (!set) c["torch_dtype"] = dtype_word(*dtype);
        const std::string text = c.dump(2) + "\n";
        atomic_write_file(dir / name, std::span<const uint8_t>((const uint8_t*)text.data(), text.size()));
        continue;
      }
    }
    fs::copy_file(e.path(), dir / name);
  }
  return floating.size() == 1 ? *floating.begin() : DType::kFloat32;
}

}  // namespace spore::nlp::merge
