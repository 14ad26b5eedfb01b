// phi3: Phi-3 / Phi-3.5 mini and medium (transformers' Phi3ForCausalLM, llama.cpp's "phi3"). The
// llama decoder with q, k and v as one projection (qkv_proj, rows [q | k | v]) and gate and up as
// one (gate_up_proj, rows [gate | up]), and LongRoPE ("longrope", formerly "su"): short factors up
// to original_max_position_embeddings, long ones past it, with the attention factor
// sqrt(1 + ln(max / original) / ln(original)). A sliding_window in config.json is applied as
// transformers does; llama.cpp ignores it (its phi3 code switches windows off), and so does a GGUF.
// GGUF (llama.cpp's converter): attn_qkv and the fused ffn_up (2 * intermediate rows), the factors
// as rope_factors_short / rope_factors_long tensors (the decoder divides by them), the original
// context and the attention factor as rope.scaling.original_context_length / attn_factor keys.
// Partial rotary embeddings (Phi-4-mini's partial_rotary_factor) are refused by name.
#include <cmath>
#include <string>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

class Phi3 final : public Family {
 public:
  Phi3() : Family("phi3", {"phi3"}, {"Phi3ForCausalLM"}, "phi3", {"phi3"}) {
    writes.own_rope = true;
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.q = names.k = names.v = names.gate = names.up = {};
    names.qkv = {L + "self_attn.qkv_proj.weight", B + "attn_qkv.weight"};
    names.gate_up = {L + "mlp.gate_up_proj.weight", B + "ffn_up.weight"};
  }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    const std::string& src = c.source;
    if (c.rope_scaling.type == "su") c.rope_scaling.type = "longrope";
    double partial = json_num(cfg, "partial_rotary_factor", src, 1.0);
    for (const char* key : {"rope_parameters", "rope_scaling"})
      if (cfg.contains(key) && cfg[key].is_object()) partial = json_num(cfg[key], "partial_rotary_factor", src, partial);
    if (partial != 1.0)
      throw Error(ErrorCode::kUnsupported, src + ": partial_rotary_factor " + std::to_string(partial) +
                                               " (phi3 runs the rope over the whole head, 1.0)");
    read_sliding_window(cfg, c, /*absent=*/0);
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    Family::read_gguf(g, c);
    const std::string p = c.architecture + ".";
    bool has_factors = false;
    for (const auto& t : g.tensors()) has_factors |= t.name == "rope_factors_short.weight";
    if (!has_factors) return;
    // The factors are tensors (the decoder divides by them); the config keeps ones of their length
    // so that the long / short switch and the attention factor work as for config.json.
    const std::string orig = p + "rope.scaling.original_context_length";
    if (!g.contains(orig)) config_fail(c.source, "rope_factors_short.weight needs " + orig);
    const int64_t head = c.head_dim > 0 ? c.head_dim : (c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
    const int64_t rot = c.rope_dim > 0 ? c.rope_dim : head;
    if (rot != head)
      throw Error(ErrorCode::kUnsupported, c.source + ": " + p + "rope.dimension_count " + std::to_string(rot) +
                                               " differs from the head size " + std::to_string(head) +
                                               " (phi3 runs the rope over the whole head)");
    c.rope_scaling.type = "longrope";
    c.rope_scaling.original_max_position = g.get_int(orig);
    const std::string attn = p + "rope.scaling.attn_factor";
    c.rope_scaling.attention_factor = g.contains(attn) ? g.get_float(attn) : 0.0;
    c.rope_scaling.short_factor.assign(static_cast<size_t>(rot / 2), 1.0);
    c.rope_scaling.long_factor.assign(static_cast<size_t>(rot / 2), 1.0);
  }

  // As llama.cpp's Phi3MiniModel writes them: the rotary size, the original context, the
  // window (0 for none) and, for LongRoPE, the attention factor and the two factor tensors.
  void write_gguf_extras(const nlohmann::json& cfg, GgufWriter& w, std::vector<ExtraTensor>& tensors) const override {
    const std::string a = writes.arch + ".", src = "config.json";
    const nlohmann::json rope = rope_object(cfg);
    const int64_t heads = json_int(cfg, "num_attention_heads", src), hidden = json_int(cfg, "hidden_size", src);
    const int64_t max_pos = json_int(cfg, "max_position_embeddings", src);
    const int64_t orig = json_int(rope, "original_max_position_embeddings", src,
                                  json_int(cfg, "original_max_position_embeddings", src, max_pos));
    if (heads <= 0) config_fail(src, "num_attention_heads must be positive");
    const int64_t rot = hidden / heads;
    w.set_u32(a + "rope.dimension_count", static_cast<uint32_t>(rot));
    w.set_u32(a + "rope.scaling.original_context_length", static_cast<uint32_t>(orig));
    w.set_u32(a + "attention.sliding_window",
              cfg.contains("sliding_window") && cfg["sliding_window"].is_number_integer() ? cfg["sliding_window"].get<uint32_t>() : 0);
    std::string type = json_str(rope, "rope_type", src);
    if (type.empty()) type = json_str(rope, "type", src);
    if (!rope.contains("long_factor")) {
      if (!type.empty() && type != "default")
        throw Error(ErrorCode::kUnsupported, src + ": rope type "" + type + "" without long_factor (phi3 writes longrope)");
      return;
    }
    if (type != "longrope" && type != "su")
      throw Error(ErrorCode::kUnsupported, src + ": rope type "" + type + "" with factors (phi3 writes longrope / su)");
    const double scale = static_cast<double>(max_pos) / static_cast<double>(orig);
    const double attn = scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(static_cast<double>(orig))) : 1.0;
    w.set_f32(a + "rope.scaling.attn_factor", static_cast<float>(attn));
    add_longrope_factor_tensors(rope, rot / 2, tensors);
  }

  // The fused product and the q / k / v slices copied out of it are alive together.
  std::pair<int64_t, int64_t> projection_widths(const ModelConfig& c) const override {
    const auto [q, kv] = Family::projection_widths(c);
    return {2 * q, 2 * kv};
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (LayerSpec& l : s.layers) {
      l.attention.fused_qkv = true;
      l.mlp.fused_gate_up = true;
      l.attention.sliding_window = static_cast<int64_t>(extra(c, "sliding_window"));
    }
    return s;
  }
};

}  // namespace

const Family& phi3_family() {
  static const Phi3 f;
  return f;
}

}  // namespace spore::nlp::models
