// The adapter files (NOTE [LoRA adapter files]): PEFT's adapter_config.json +
// adapter_model.safetensors, and llama.cpp's GGUF LoRA adapter, both from a LoraModel.
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf_writer.h"
#include "spore/nlp/finetune.h"

namespace spore::nlp {

namespace {

// llama.cpp's converter reorders llama's q/k rows within each head so that its reader rotates
// adjacent pairs: GGUF row h*hd + 2i + j holds Hugging Face row h*hd + j*hd/2 + i. The adapter's
// B rows are output rows, so they move the same way (`to_gguf`), or back (`!to_gguf`).
std::vector<float> permute_qk_rows(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads, bool to_gguf) {
  const int64_t hd = rows / heads, half = hd / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const int64_t g = h * hd + 2 * i + j, f = h * hd + j * half + i;
        std::memcpy(&out[static_cast<size_t>((to_gguf ? g : f) * cols)], &w[static_cast<size_t>((to_gguf ? f : g) * cols)],
                    static_cast<size_t>(cols) * sizeof(float));
      }
  return out;
}

// Heads whose rows a llama GGUF permutes for this target (0: none).
int64_t permuted_heads(const ModelConfig& c, const models::Family& f, const std::string& target) {
  if (!f.writes.permute_qk && !f.gguf_interleaved_rope) return 0;
  return target == "q_proj" ? c.num_heads : target == "k_proj" ? c.num_kv_heads : 0;
}

const models::TensorName& name_of(const models::WeightNames& n, const std::string& t) {
  return t == "q_proj" ? n.q : t == "k_proj" ? n.k : t == "v_proj" ? n.v : t == "o_proj" ? n.o
         : t == "gate_proj" ? n.gate : t == "up_proj" ? n.up : n.down;
}

std::vector<float> floats(const Parameter& p) { return p.value().contiguous().to_vector<float>(); }

const models::Family& family_of(const LoraModel& m) {
  const models::Family* f = models::find_family(m.model_config().family);
  if (!f) throw Error(ErrorCode::kInternal, "adapter: no family " + m.model_config().family);
  return *f;
}

}  // namespace

void write_peft_adapter(const LoraModel& model, const std::filesystem::path& dir, const std::string& base_model_name) {
  const LoraConfig& lc = model.lora_config();
  const ModelConfig& c = model.model_config();
  const models::Family& fam = family_of(model);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error(ErrorCode::kIO, "finetune: cannot create " + dir.string() + ": " + ec.message());
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const TrainableLora& a : model.adapters()) {
    Tensor b = a.b.value().contiguous();
    const int64_t heads = model.gguf_layout() ? permuted_heads(c, fam, a.target) : 0;
    if (heads > 0)  // the base's rows are llama.cpp's order: back to Hugging Face's
      b = Tensor::from_vector(permute_qk_rows(floats(a.b), b.size(0), b.size(1), heads, false), b.shape());
    tensors.emplace_back(a.a.name(), a.a.value().contiguous());
    tensors.emplace_back(a.b.name(), b);
  }
  save_safetensors(dir / "adapter_model.safetensors", tensors, {{"format", "pt"}});
  const nlohmann::json config = {{"alpha_pattern", nlohmann::json::object()},
                                 {"auto_mapping", nullptr},
                                 {"base_model_name_or_path", base_model_name},
                                 {"bias", "none"},
                                 {"fan_in_fan_out", false},
                                 {"inference_mode", true},
                                 {"init_lora_weights", true},
                                 {"layers_pattern", nullptr},
                                 {"layers_to_transform", nullptr},
                                 {"lora_alpha", lc.alpha},
                                 {"lora_dropout", lc.dropout},
                                 {"modules_to_save", nullptr},
                                 {"peft_type", "LORA"},
                                 {"r", lc.rank},
                                 {"rank_pattern", nlohmann::json::object()},
                                 {"revision", nullptr},
                                 {"target_modules", lc.targets},
                                 {"task_type", "CAUSAL_LM"},
                                 {"use_dora", false},
                                 {"use_rslora", false}};
  const std::string text = config.dump(2) + "\n";
  atomic_write_file(dir / "adapter_config.json", {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

void write_gguf_adapter(const LoraModel& model, const std::filesystem::path& path) {
  const ModelConfig& c = model.model_config();
  const models::Family& fam = family_of(model);
  // A GGUF base names its own architecture; a Hugging Face one is written as spore convert (and
  // llama.cpp's converter) would write the base.
  const std::string arch = model.gguf_layout() ? c.architecture : fam.writes.arch;
  if (arch.empty())
    throw Error(ErrorCode::kUnsupported, "finetune: the " + fam.name + " family has no GGUF form spore convert writes, "
                                         "so no llama.cpp adapter is written (the PEFT adapter is)");
  GgufWriter w;
  w.set_string("general.architecture", arch);
  w.set_string("general.type", "adapter");
  w.set_string("adapter.type", "lora");
  w.set_f32("adapter.lora.alpha", static_cast<float>(model.lora_config().alpha));
  for (const TrainableLora& a : model.adapters()) {
    const std::string base = models::layer_name(name_of(fam.names, a.target).gguf, a.layer);
    if (base.empty()) throw Error(ErrorCode::kUnsupported, "finetune: " + a.target + " has no GGUF name in " + fam.name);
    const int64_t r = a.a.value().size(0), in = a.a.value().size(1), out = a.b.value().size(0);
    std::vector<float> av = floats(a.a), bv = floats(a.b);
    const int64_t heads = !model.gguf_layout() && fam.writes.permute_qk ? permuted_heads(c, fam, a.target) : 0;
    if (heads > 0) bv = permute_qk_rows(bv, out, r, heads, true);
    auto bytes = [](const std::vector<float>& v) {
      std::vector<uint8_t> b(v.size() * sizeof(float));
      std::memcpy(b.data(), v.data(), b.size());
      return b;
    };
    // ggml dims, fastest first: A [r, in] is {in, r}, B [out, r] is {r, out} (llama-adapter.cpp
    // checks model ne[0] == a ne[0], model ne[1] == b ne[1], a ne[1] == b ne[0]).
    w.add_tensor(base + ".lora_a", GgmlType::kF32, {static_cast<uint64_t>(in), static_cast<uint64_t>(r)}, bytes(av));
    w.add_tensor(base + ".lora_b", GgmlType::kF32, {static_cast<uint64_t>(r), static_cast<uint64_t>(out)}, bytes(bv));
  }
  w.write(path);
}

}  // namespace spore::nlp
