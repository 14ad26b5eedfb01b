// deepseek2: DeepSeek-V2 / V2.5 / V2-Lite (transformers' DeepseekV2ForCausalLM). MiniCPM3's
// multi-head latent attention block (q through q_a -> RMSNorm -> q_b, or q_proj when q_lora_rank
// is null; k and v from a compressed latent with a shared rope key), its rope on adjacent pairs
// (HF's complex rotation; llama.cpp's "normal" rope, no permutation in either file), then per
// layer a dense SwiGLU MLP for the first first_k_dense_replace layers and a mixture of experts
// after (moe.h): a softmax router over n_routed_experts (group_limited_greedy: only the experts
// of the topk_group best of n_group groups), top num_experts_per_tok, renormalised when
// norm_topk_prob, times routed_scaling_factor; plus n_shared_experts always-on experts as one MLP
// of n_shared_experts * moe_intermediate_size. GGUF: llama.cpp's converter splits kv_b per head
// into attn_k_b / attn_v_b (blocks.cc joins them back) and writes the MLA head sizes under
// key_length_mla / value_length_mla (key_length / value_length are then the latent's).
#include <algorithm>
#include <string>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"

namespace spore::nlp::models {

namespace {

// As transformers' DeepseekV2RMSNorm default: the low-rank norms do not take rms_norm_eps.
constexpr double kLatentNormEps = 1e-6;

int64_t ext(const ModelConfig& c, const char* key) {
  const double v = extra(c, key);
  return v >= 0x1p40 || v < -0x1p40 ? -1 : static_cast<int64_t>(v);
}

class Deepseek2 final : public Family {
 public:
  Deepseek2() : Family("deepseek2", {"deepseek_v2"}, {"DeepseekV2ForCausalLM"}, "deepseek2", {"deepseek2"}) {
    const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
    names.q_a = {L + "self_attn.q_a_proj.weight", B + "attn_q_a.weight"};
    names.q_a_norm = {L + "self_attn.q_a_layernorm.weight", B + "attn_q_a_norm.weight"};
    names.q_b = {L + "self_attn.q_b_proj.weight", B + "attn_q_b.weight"};
    names.kv_a = {L + "self_attn.kv_a_proj_with_mqa.weight", B + "attn_kv_a_mqa.weight"};
    names.kv_a_norm = {L + "self_attn.kv_a_layernorm.weight", B + "attn_kv_a_norm.weight"};
    names.kv_b = {L + "self_attn.kv_b_proj.weight", B + "attn_kv_b.weight"};
    names.k_b = {"", B + "attn_k_b.weight"};
    names.v_b = {"", B + "attn_v_b.weight"};
    names.gate_shexp = {L + "mlp.shared_experts.gate_proj.weight", B + "ffn_gate_shexp.weight"};
    names.up_shexp = {L + "mlp.shared_experts.up_proj.weight", B + "ffn_up_shexp.weight"};
    names.down_shexp = {L + "mlp.shared_experts.down_proj.weight", B + "ffn_down_shexp.weight"};
  }

  void read_hf(const nlohmann::json& cfg, ModelConfig& c) const override {
    Family::read_hf(cfg, c);
    const std::string& src = c.source;
    const bool no_q_lora = !cfg.contains("q_lora_rank") || cfg["q_lora_rank"].is_null();
    c.extra["q_lora_rank"] = no_q_lora ? 0 : static_cast<double>(json_int(cfg, "q_lora_rank", src));
    for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"})
      c.extra[key] = static_cast<double>(json_int(cfg, key, src));
    c.v_head_dim = json_int(cfg, "v_head_dim", src);
    c.head_dim = ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim");
    c.rope_dim = ext(c, "qk_rope_head_dim");
    c.num_kv_heads = c.num_heads;  // the latent expands to every head
    read_moe_hf(cfg, c, "n_routed_experts", "moe_intermediate_size");
    c.extra["shared_expert_intermediate_size"] =
        static_cast<double>(json_int(cfg, "n_shared_experts", src, 0)) * extra(c, "moe_intermediate_size");
    c.extra["first_k_dense_replace"] = static_cast<double>(json_int(cfg, "first_k_dense_replace", src, 0));
    c.extra["routed_scaling_factor"] = json_num(cfg, "routed_scaling_factor", src, 1.0);
    const std::string method = json_str(cfg, "topk_method", src);
    if (method == "group_limited_greedy") {
      c.extra["n_group"] = static_cast<double>(json_int(cfg, "n_group", src));
      c.extra["topk_group"] = static_cast<double>(json_int(cfg, "topk_group", src));
    } else if (!method.empty() && method != "greedy") {
      throw Error(ErrorCode::kUnsupported, src + ": topk_method \"" + method +
                                               "\" (deepseek2 runs greedy and group_limited_greedy)");
    }
    const std::string scoring = json_str(cfg, "scoring_func", src);
    if (!scoring.empty() && scoring != "softmax")
      throw Error(ErrorCode::kUnsupported, src + ": scoring_func \"" + scoring + "\" (DeepSeek-V2 scores by softmax)");
  }

  void read_gguf(const GgufFile& g, ModelConfig& c) const override {
    const std::string p = c.architecture + ".";
    auto opt = [&](const std::string& key, int64_t def) { return g.contains(p + key) ? g.get_int(p + key) : def; };
    c.extra["q_lora_rank"] = static_cast<double>(opt("attention.q_lora_rank", 0));
    c.extra["kv_lora_rank"] = static_cast<double>(g.get_int(p + "attention.kv_lora_rank"));
    // Files with the split kv_b carry the MLA head sizes apart from the latent's.
    c.head_dim = opt("attention.key_length_mla", c.head_dim);
    c.v_head_dim = opt("attention.value_length_mla", opt("attention.value_length", c.head_dim));
    const int64_t rope = g.get_int(p + "rope.dimension_count");
    c.extra["qk_rope_head_dim"] = static_cast<double>(rope);
    c.extra["qk_nope_head_dim"] = static_cast<double>(c.head_dim - rope);
    c.num_kv_heads = c.num_heads;
    read_moe_gguf(g, c);
    c.extra["shared_expert_intermediate_size"] =
        static_cast<double>(opt("expert_shared_count", 0)) * extra(c, "moe_intermediate_size");
    c.extra["first_k_dense_replace"] = static_cast<double>(opt("leading_dense_block_count", 0));
    c.extra["routed_scaling_factor"] = g.contains(p + "expert_weights_scale") ? g.get_float(p + "expert_weights_scale") : 1.0;
    c.extra["norm_topk_prob"] = g.contains(p + "expert_weights_norm") && g.get_bool(p + "expert_weights_norm") ? 1 : 0;
    c.extra["n_group"] = static_cast<double>(opt("expert_group_count", 0));
    c.extra["topk_group"] = static_cast<double>(opt("expert_group_used_count", 0));
    // llama.cpp's expert_gating_func: 1 softmax (absent: DeepSeek-V2's), 2 sigmoid.
    const int64_t gating = opt("expert_gating_func", 1);
    if (gating != 1 && gating != 2)
      throw Error(ErrorCode::kUnsupported, c.source + ": " + p + "expert_gating_func " + std::to_string(gating) +
                                               " (1 softmax and 2 sigmoid are supported)");
    c.extra["sigmoid_gating"] = gating == 2 ? 1 : 0;
  }

  void validate(ModelConfig& c) const override {
    const std::string& src = c.source;
    for (const char* key : {"kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim"})
      if (ext(c, key) <= 0 || ext(c, key) > (int64_t{1} << 31))
        config_fail(src, std::string(key) + " must be a positive size, got " + std::to_string(ext(c, key)));
    if (ext(c, "q_lora_rank") < 0 || ext(c, "q_lora_rank") > (int64_t{1} << 31)) config_fail(src, "q_lora_rank must be a size or null");
    if (c.v_head_dim <= 0 || c.v_head_dim > (int64_t{1} << 31)) config_fail(src, "v_head_dim must be a positive size");
    if (c.head_dim != ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim") || c.rope_dim != ext(c, "qk_rope_head_dim"))
      config_fail(src, "the q/k head (" + std::to_string(c.head_dim) + ") must be qk_nope_head_dim + qk_rope_head_dim");
    if (!c.rope_scaling.type.empty())
      throw Error(ErrorCode::kUnsupported, src + ": deepseek2 with rope scaling \"" + c.rope_scaling.type +
                                               "\" is not supported (its yarn attention scale is not built)");
    validate_moe(c);
    const int64_t dense = ext(c, "first_k_dense_replace");
    if (dense < 0 || dense > c.num_layers)
      config_fail(src, "first_k_dense_replace (leading_dense_block_count) must be 0.." + std::to_string(c.num_layers));
    const int64_t groups = ext(c, "n_group"), top = ext(c, "topk_group"), E = ext(c, "num_experts");
    if (groups > 1 && (E % groups != 0 || top < 1 || top > groups || top * (E / groups) < ext(c, "num_experts_per_tok")))
      config_fail(src, "n_group " + std::to_string(groups) + " / topk_group " + std::to_string(top) +
                           " must split the experts evenly and leave num_experts_per_tok of them to choose");
    if (!(extra(c, "routed_scaling_factor") > 0)) config_fail(src, "routed_scaling_factor must be positive");
  }

  // spore convert writes llama.cpp's older deepseek2 form: kv_b whole (attn_kv_b), key_length /
  // value_length the expanded heads' and no *_mla keys, which llama.cpp still loads (its non-MLA
  // path) and which needs no per-head split of kv_b.
  void write_gguf(const ModelConfig& c, GgufWriter& w) const override {
    const std::string p = writes.arch + ".";
    write_moe_gguf(c, writes.arch, w, /*widths=*/true);
    auto u32 = [&](const std::string& key, int64_t v) { w.set_u32(p + key, static_cast<uint32_t>(v)); };
    u32("attention.key_length", c.head_dim);
    u32("attention.value_length", c.v_head_dim);
    if (ext(c, "q_lora_rank") > 0) u32("attention.q_lora_rank", ext(c, "q_lora_rank"));
    u32("attention.kv_lora_rank", ext(c, "kv_lora_rank"));
    u32("rope.dimension_count", ext(c, "qk_rope_head_dim"));
    u32("leading_dense_block_count", ext(c, "first_k_dense_replace"));
    u32("expert_shared_count", ext(c, "shared_expert_intermediate_size") / std::max<int64_t>(1, ext(c, "moe_intermediate_size")));
    w.set_f32(p + "expert_weights_scale", static_cast<float>(extra(c, "routed_scaling_factor")));
    if (extra(c, "norm_topk_prob") != 0) w.set_bool(p + "expert_weights_norm", true);
    u32("vocab_size", c.vocab_size);
  }

  DecoderSpec decoder(const ModelConfig& c) const override {
    DecoderSpec s = Family::decoder(c);
    for (size_t i = 0; i < s.layers.size(); ++i) {
      LayerSpec& l = s.layers[i];
      l.attention.latent = {ext(c, "q_lora_rank"), ext(c, "kv_lora_rank"), ext(c, "qk_nope_head_dim"),
                            ext(c, "qk_rope_head_dim"), kLatentNormEps, /*interleaved_rope=*/true};
      if (static_cast<int64_t>(i) < ext(c, "first_k_dense_replace")) continue;
      l.moe = moe_options(c);
      l.moe.scale = extra(c, "routed_scaling_factor");
      l.moe.gating = extra(c, "sigmoid_gating") != 0 ? Gating::kSigmoid : Gating::kSoftmax;
      l.moe.groups = ext(c, "n_group");
      l.moe.top_groups = ext(c, "topk_group");
    }
    return s;
  }

  std::pair<int64_t, int64_t> projection_widths(const ModelConfig& c) const override {
    const int64_t qk = ext(c, "qk_nope_head_dim") + ext(c, "qk_rope_head_dim");
    return {c.num_heads * qk + ext(c, "q_lora_rank"), c.num_heads * (qk + c.v_head_dim) + ext(c, "kv_lora_rank")};
  }
};

}  // namespace

const Family& deepseek2_family() {
  static const Deepseek2 f;
  return f;
}

}  // namespace spore::nlp::models
