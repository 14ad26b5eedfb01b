// gemma3: Gemma 3 text models (transformers' Gemma3ForCausalLM, model_type gemma3_text; llama.cpp's
// "gemma3"). Gemma 2's layer (norms of x * (1 + weight), sandwich norms, GeGLU, sqrt(hidden)
// embedding scale, attention scaled by query_pre_attn_scalar^-1/2) with per-head q/k RMSNorms
// (weight + 1 too), no attention soft-cap, an optional final-logit soft-cap, sliding-window layers in
// a repeating pattern (layer i slides unless i % n == n - 1; n = 6 in the published models) and two
// rope bases: sliding layers rotate with the local base (10000, unscaled), full layers with
// rope_theta and its scaling. Tied embeddings.
// GGUF (llama.cpp's converter): the + 1 folded into every norm weight, the window, the global base
// as rope.freq_base and the local one as rope.freq_base_swa; no pattern key (llama.cpp then takes
// 6, which a file may override with attention.sliding_window_pattern, an integer or one flag per
// layer) and no query_pre_attn_scalar (llama.cpp scales by key_length^-1/2, or by
// (hidden / heads)^-1/2 for the 62-layer 27B): this file reads a GGUF the way llama.cpp does.
#include <cmath>
#include <string>
#include <vector>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

// llama.cpp's n_pattern of a list of sliding flags: 0 every layer slides, 1 none, n: layer i slides
// iff i % n < n - 1; -1 when no such n describes the list.
int64_t sliding_period(const std::vector<bool>& sliding) {
  const int64_t L = static_cast<int64_t>(sliding.size());
  auto fits = [&](int64_t n) {
    for (int64_t i = 0; i < L; ++i)
      if (sliding[static_cast<size_t>(i)] != (n == 0 || i % n < n - 1)) return false;
    return true;
  };
  for (int64_t n : {int64_t{0}, int64_t{1}})
    if (fits(n)) return n;
  for (int64_t n = 2; n <= L; ++n)
    if (fits(n)) return n;
  return -1;
}

// A period longer than the model slides every layer, as 0 does (and keeps the stored number small).
int64_t normal_period(int64_t period, int64_t layers) { return period > layers && layers > 0 ? 0 : period; }

class Gemma3 final : public Family {
 public:
  Gemma3() : Family("gemma3", {"gemma3_text"}, {"Gemma3ForCausalLM"}, "gemma3", {"gemma3"}) {
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.ffn_norm = {L + "pre_feedforward_layernorm.weight", B + "ffn_norm.weight"};
    names.post_attn_norm = {L + "post_attention_layernorm.weight", B + "post_attention_norm.weight"};
    names.post_ffn_norm = {L + "post_feedforward_layernorm.weight", B + "post_ffw_norm.weight"};
    writes.norm_plus_one = true;
  }

  bool default_tie() const override { return true; }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    const std::string& src = c.source;
    read_gelu_tanh(cfg, c);
    c.qk_norm = true;
    c.extra["norm_offset"] = 1;
    read_sliding_window(cfg, c, /*absent=*/4096);
    c.extra["query_pre_attn_scalar"] = json_num(cfg, "query_pre_attn_scalar", src, 256.0);
    auto cap = [&](const char* key) {
      return cfg.contains(key) && !cfg[key].is_null() ? json_num(cfg, key, src) : 0.0;
    };
    c.extra["attn_logit_softcapping"] = cap("attn_logit_softcapping");
    c.extra["final_logit_softcapping"] = cap("final_logit_softcapping");
    // The rope: transformers 5 nests one set of parameters per layer kind; 4.x has rope_theta (and
    // rope_scaling, read by the shared code) for full layers and rope_local_base_freq.
    double local = json_num(cfg, "rope_local_base_freq", src, 10000.0);
    if (const auto rp = cfg.find("rope_parameters"); rp != cfg.end() && rp->is_object() && rp->contains("full_attention")) {
      const nlohmann::json& full = (*rp)["full_attention"];
      if (!full.is_object()) config_fail(src, "rope_parameters.full_attention must be an object");
      c.rope_theta = json_num(full, "rope_theta", src + " rope_parameters.full_attention", 1000000.0);
      const std::string type = json_str(full, "rope_type", src);
      if (type == "linear") {
        c.rope_scaling.type = "linear";
        c.rope_scaling.factor = json_num(full, "factor", src + " rope_parameters.full_attention");
      } else if (!type.empty() && type != "default") {
        throw Error(ErrorCode::kUnsupported, src + ": rope_parameters.full_attention.rope_type \"" + type +
                                                 "\" (gemma3 runs default or linear)");
      }
      if (const auto sl = rp->find("sliding_attention"); sl != rp->end()) {
        if (!sl->is_object()) config_fail(src, "rope_parameters.sliding_attention must be an object");
        local = json_num(*sl, "rope_theta", src + " rope_parameters.sliding_attention", local);
        const std::string st = json_str(*sl, "rope_type", src);
        if (!st.empty() && st != "default")
          throw Error(ErrorCode::kUnsupported, src + ": rope_parameters.sliding_attention.rope_type \"" + st +
                                                   "\" (gemma3's sliding layers run the default rope)");
      }
    }
    c.extra["rope_local_base_freq"] = local;
    // The layer pattern: layer_types, else sliding_window_pattern (4.x), else 6.
    int64_t period = json_int(cfg, "sliding_window_pattern", src, int64_t{6});
    if (const auto lt = cfg.find("layer_types"); lt != cfg.end() && !lt->is_null()) {
      const int64_t layers = json_int(cfg, "num_hidden_layers", src);
      if (!lt->is_array() || static_cast<int64_t>(lt->size()) != layers)
        config_fail(src, "layer_types must list one kind per layer (num_hidden_layers = " + std::to_string(layers) + ")");
      std::vector<bool> sliding;
      for (size_t i = 0; i < lt->size(); ++i) {
        const nlohmann::json& t = (*lt)[i];
        if (!t.is_string() || (t != "sliding_attention" && t != "full_attention"))
          config_fail(src, "layer_types[" + std::to_string(i) + "] is " + t.dump() +
                               " (sliding_attention or full_attention)");
        sliding.push_back(t == "sliding_attention");
      }
      period = sliding_period(sliding);
      if (period < 0)
        throw Error(ErrorCode::kUnsupported, src + ": layer_types is no repeating pattern of sliding layers ending "
                                                   "in one full layer; gemma3 runs those");
    }
    if (period < 0) config_fail(src, "sliding_window_pattern must be >= 0, got " + std::to_string(period));
    c.extra["sliding_window_pattern"] = static_cast<double>(normal_period(period, c.num_layers));
  }

  // As llama.cpp's Gemma3Model writes them, plus the layer pattern as the integer llama.cpp reads
  // (its converter leaves it out, so its files run every 6th layer full whatever config.json said).
  void write_gguf_extras(const nlohmann::json& cfg, GgufWriter& w, std::vector<ExtraTensor>&) const override {
    const std::string a = writes.arch + ".";
    ModelConfig c;
    c.source = "config.json";
    c.family = name;
    c.num_layers = json_int(cfg, "num_hidden_layers", c.source);
    c.max_position_embeddings = json_int(cfg, "max_position_embeddings", c.source, int64_t{131072});
    read_hf(cfg, c);
    // The shared keys came from a 4.x config's top-level rope_theta / rope_scaling, if any.
    if (!w.contains(a + "rope.freq_base")) w.set_f32(a + "rope.freq_base", static_cast<float>(c.rope_theta));
    w.set_f32(a + "rope.freq_base_swa", static_cast<float>(extra(c, "rope_local_base_freq")));
    if (c.rope_scaling.type == "linear" && !w.contains(a + "rope.scaling.type")) {
      w.set_string(a + "rope.scaling.type", "linear");
      w.set_f32(a + "rope.scaling.factor", static_cast<float>(c.rope_scaling.factor));
    }
    if (extra(c, "final_logit_softcapping") > 0)
      w.set_f32(a + "final_logit_softcapping", static_cast<float>(extra(c, "final_logit_softcapping")));
    if (cfg.contains("sliding_window") && cfg["sliding_window"].is_number_integer()) {
      w.set_u32(a + "attention.sliding_window", cfg["sliding_window"].get<uint32_t>());
      w.set_u32(a + "attention.sliding_window_pattern", static_cast<uint32_t>(extra(c, "sliding_window_pattern")));
    }
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    const std::string p = c.architecture + ".";
    c.qk_norm = true;
    c.extra["norm_offset"] = 0;  // folded into the weights by the converter
    const int64_t window = g.contains(p + "attention.sliding_window") ? g.get_int(p + "attention.sliding_window") : 0;
    if (window < 0) config_fail(c.source, p + "attention.sliding_window must not be negative");
    if (window > 0 && window < c.max_position_embeddings) c.extra["sliding_window"] = static_cast<double>(window);
    int64_t period = window > 0 ? 6 : 1;  // llama.cpp: no window, no sliding layers
    if (const GgufValue* v = g.find(p + "attention.sliding_window_pattern"); v && window > 0) {
      if (v->is_array()) {
        std::vector<bool> sliding;
        for (const GgufValue& e : std::get<std::vector<GgufValue>>(v->value)) {
          if (!std::holds_alternative<bool>(e.value))
            config_fail(c.source, p + "attention.sliding_window_pattern must hold one bool per layer");
          sliding.push_back(std::get<bool>(e.value));
        }
        if (static_cast<int64_t>(sliding.size()) != c.num_layers)
          config_fail(c.source, p + "attention.sliding_window_pattern has " + std::to_string(sliding.size()) +
                                    " flags for " + std::to_string(c.num_layers) + " layers");
        period = sliding_period(sliding);
        if (period < 0)
          throw Error(ErrorCode::kUnsupported, c.source + ": " + p +
                                                   "attention.sliding_window_pattern is no repeating pattern gemma3 runs");
      } else {
        period = g.get_int(p + "attention.sliding_window_pattern");
        if (period < 0) config_fail(c.source, p + "attention.sliding_window_pattern must be >= 0");
      }
    }
    c.extra["sliding_window_pattern"] = static_cast<double>(normal_period(period, c.num_layers));
    c.extra["rope_local_base_freq"] = g.contains(p + "rope.freq_base_swa") ? g.get_float(p + "rope.freq_base_swa") : 10000.0;
    c.extra["final_logit_softcapping"] =
        g.contains(p + "final_logit_softcapping") ? g.get_float(p + "final_logit_softcapping") : 0.0;
    const int64_t per_head = c.num_heads > 0 ? c.hidden_size / c.num_heads : 0;  // heads checked later
    const int64_t head = c.head_dim > 0 ? c.head_dim : per_head;
    c.extra["query_pre_attn_scalar"] = static_cast<double>(c.num_layers == 62 ? per_head : head);
  }

  void validate(ModelConfig& c) const override {
    Family::validate(c);
    if (!(extra(c, "query_pre_attn_scalar") > 0)) config_fail(c.source, "query_pre_attn_scalar must be positive");
    if (!(extra(c, "rope_local_base_freq") > 0)) config_fail(c.source, "the sliding layers' rope base must be positive");
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"})
      if (extra(c, key) < 0) config_fail(c.source, std::string(key) + " must be positive or null");
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    const auto n = static_cast<int64_t>(extra(c, "sliding_window_pattern"));
    for (size_t i = 0; i < s.layers.size(); ++i) {
      LayerSpec& l = s.layers[i];
      l.norm.offset = extra(c, "norm_offset");
      l.post_norms = true;
      l.mlp.activation = Activation::kGeluTanh;
      l.attention.qk_norm_offset = extra(c, "norm_offset");
      l.attention.scale = 1.0 / std::sqrt(extra(c, "query_pre_attn_scalar"));
      l.attention.softcap = extra(c, "attn_logit_softcapping");
      const auto layer = static_cast<int64_t>(i);
      if (n == 0 || layer % n < n - 1) {
        l.attention.sliding_window = static_cast<int64_t>(extra(c, "sliding_window"));
        l.attention.rope_theta = extra(c, "rope_local_base_freq");
      }
    }
    s.final_norm.offset = extra(c, "norm_offset");
    s.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.hidden_size)));
    s.logit_softcap = extra(c, "final_logit_softcapping");
    return s;
  }
};

}  // namespace

const Family& gemma3_family() {
  static const Gemma3 f;
  return f;
}

}  // namespace spore::nlp::models
