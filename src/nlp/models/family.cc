// The Family interface's defaults (the llama decoder) and the lookup of a family by the name an
// artifact gives it (NOTE [Model families]).
#include "nlp/models/family.h"

#include <algorithm>

#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp::models {

void Family::read_hf(const nlohmann::json& cfg, ModelConfig& c) const {
  if (const std::string act = json_str(cfg, "hidden_act", c.source); !act.empty() && act != "silu")
    throw Error(ErrorCode::kUnsupported, c.source + ": hidden_act \"" + act + "\" (only silu, the SwiGLU MLP, is supported)");
}

void Family::read_gguf(const GgufFile& g, ModelConfig& c) const {
  const std::string key = c.architecture + ".attention.value_length";
  if (g.contains(key) && c.head_dim != 0 && g.get_int(key) != c.head_dim)
    config_fail(c.source, key + " differs from key_length (only equal head sizes are supported for " + c.architecture + ")");
}

void Family::validate(ModelConfig& c) const {
  if (c.v_head_dim == 0) c.v_head_dim = c.head_dim;
}

DecoderSpec Family::decoder(const ModelConfig& c) const {
  DecoderSpec s;
  LayerSpec l;
  l.norm.eps = c.rms_norm_eps;
  l.attention.bias = c.attention_bias;
  l.attention.qk_norm = c.qk_norm;
  l.attention.qk_norm_eps = c.rms_norm_eps;
  s.layers.assign(static_cast<size_t>(c.num_layers), l);
  s.final_norm.eps = c.rms_norm_eps;
  return s;
}

void Family::write_gguf(const ModelConfig&, GgufWriter&) const {}

std::pair<int64_t, int64_t> Family::projection_widths(const ModelConfig& c) const {
  const int64_t head = c.head_dim > 0 ? c.head_dim : (c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  return {c.num_heads * head, 2 * std::max<int64_t>(c.num_kv_heads, 1) * head};
}

void read_sliding_window(const nlohmann::json& cfg, ModelConfig& c, int64_t absent) {
  if (cfg.contains("sliding_window") && cfg["sliding_window"].is_null()) return;
  const int64_t window = json_int(cfg, "sliding_window", c.source, absent);
  if (window < 0) config_fail(c.source, "sliding_window must be positive or null, got " + std::to_string(window));
  // A window as long as the context changes nothing (and keeps the stored number small).
  if (window > 0 && window < c.max_position_embeddings) c.extra["sliding_window"] = static_cast<double>(window);
}

void read_gelu_tanh(const nlohmann::json& cfg, ModelConfig& c) {
  const char* field = "hidden_activation";
  std::string act = json_str(cfg, field, c.source);
  if (act.empty()) act = json_str(cfg, field = "hidden_act", c.source);
  if (!act.empty() && act != "gelu_pytorch_tanh" && act != "gelu_tanh")
    throw Error(ErrorCode::kUnsupported, c.source + ": " + field + " \"" + act + "\" (" + c.family +
                                             " runs gelu_pytorch_tanh, the tanh GeLU)");
}

nlohmann::json rope_object(const nlohmann::json& cfg) {
  nlohmann::json rope = nlohmann::json::object();
  for (const char* key : {"rope_parameters", "rope_scaling"})
    if (cfg.contains(key) && cfg[key].is_object()) rope = cfg[key];
  return rope;
}

void add_longrope_factor_tensors(const nlohmann::json& rope, int64_t half, std::vector<ExtraTensor>& tensors) {
  for (const char* key : {"long_factor", "short_factor"}) {
    if (!rope.contains(key) || !rope[key].is_array() || static_cast<int64_t>(rope[key].size()) != half)
      config_fail("config.json", std::string("rope ") + key + " must hold " + std::to_string(half) +
                                     " numbers (the rotary size / 2)");
    ExtraTensor t{std::string("rope_factors_") + (key[0] == 'l' ? "long" : "short") + ".weight", {}};
    for (const auto& f : rope[key]) {
      if (!f.is_number()) config_fail("config.json", std::string("rope ") + key + " must hold numbers");
      t.values.push_back(f.get<float>());
    }
    tensors.push_back(std::move(t));
  }
}

bool ggml_numerics_cover(const ModelConfig& c) {
  const Family* f = find_family(c.family);
  if (!f) return true;
  const DecoderSpec s = f->decoder(c);
  if (s.logit_softcap > 0) return false;
  for (const LayerSpec& l : s.layers)
    if (l.attention.sliding_window > 0 || l.attention.softcap > 0 || l.attention.rope_theta > 0) return false;
  return true;
}

double extra(const ModelConfig& c, const std::string& key) {
  const auto it = c.extra.find(key);
  return it == c.extra.end() ? 0.0 : it->second;
}

std::vector<const Family*> all_families() {
  return {&llama_family(),    &qwen2_family(),    &qwen3_family(),   &minicpm3_family(), &mistral_family(),
          &gemma2_family(),   &gemma_family(),    &gemma3_family(),  &phi3_family(),     &granite_family(),
          &olmo2_family(),    &qwen3moe_family(), &qwen2moe_family(), &mixtral_family(), &deepseek2_family()};
}

const Family* find_family(std::string_view name) {
  for (const Family* f : all_families())
    if (f->name == name) return f;
  return nullptr;
}

// model_type first (it names the family), then the architecture class.
const Family* find_family_hf(std::string_view model_type, std::string_view architecture) {
  for (const Family* f : all_families())
    for (const auto& t : f->hf_model_types)
      if (t == model_type) return f;
  for (const Family* f : all_families())
    for (const auto& a : f->hf_architectures)
      if (a == architecture) return f;
  return nullptr;
}

const Family* find_family_gguf(std::string_view arch) {
  for (const Family* f : all_families())
    if (!f->gguf_arch.empty() && f->gguf_arch == arch) return f;
  return nullptr;
}

std::string family_names() {
  std::string s;
  for (const Family* f : all_families()) s += (s.empty() ? "" : ", ") + f->name;
  return s;
}

}  // namespace spore::nlp::models
