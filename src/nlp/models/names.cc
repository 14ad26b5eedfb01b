// The weight names the families share, and lookup of a family by the name an artifact gives it.
#include <string>

#include "nlp/models/family.h"

namespace spore::nlp::models {

WeightNames llama_style_names() {
  const std::string L = "model.layers.{layer}.", B = "blk.{layer}.";
  WeightNames n;
  n.embed = {"model.embed_tokens.weight", "token_embd.weight"};
  n.final_norm = {"model.norm.weight", "output_norm.weight"};
  n.lm_head = {"lm_head.weight", "output.weight"};
  n.attn_norm = {L + "input_layernorm.weight", B + "attn_norm.weight"};
  n.q = {L + "self_attn.q_proj.weight", B + "attn_q.weight"};
  n.k = {L + "self_attn.k_proj.weight", B + "attn_k.weight"};
  n.v = {L + "self_attn.v_proj.weight", B + "attn_v.weight"};
  n.o = {L + "self_attn.o_proj.weight", B + "attn_output.weight"};
  n.q_bias = {L + "self_attn.q_proj.bias", B + "attn_q.bias"};
  n.k_bias = {L + "self_attn.k_proj.bias", B + "attn_k.bias"};
  n.v_bias = {L + "self_attn.v_proj.bias", B + "attn_v.bias"};
  n.q_norm = {L + "self_attn.q_norm.weight", B + "attn_q_norm.weight"};
  n.k_norm = {L + "self_attn.k_norm.weight", B + "attn_k_norm.weight"};
  n.ffn_norm = {L + "post_attention_layernorm.weight", B + "ffn_norm.weight"};
  n.gate = {L + "mlp.gate_proj.weight", B + "ffn_gate.weight"};
  n.up = {L + "mlp.up_proj.weight", B + "ffn_up.weight"};
  n.down = {L + "mlp.down_proj.weight", B + "ffn_down.weight"};
  n.q_a = {L + "self_attn.q_a_proj.weight", B + "attn_q_a.weight"};
  n.q_a_norm = {L + "self_attn.q_a_layernorm.weight", B + "attn_q_a_norm.weight"};
  n.q_b = {L + "self_attn.q_b_proj.weight", B + "attn_q_b.weight"};
  n.kv_a = {L + "self_attn.kv_a_proj_with_mqa.weight", B + "attn_kv_a_mqa.weight"};
  n.kv_a_norm = {L + "self_attn.kv_a_layernorm.weight", B + "attn_kv_a_norm.weight"};
  n.kv_b = {L + "self_attn.kv_b_proj.weight", B + "attn_kv_b.weight"};
  return n;
}

std::vector<const Family*> all_families() { return {&llama_family(), &qwen2_family(), &qwen3_family(), &minicpm3_family()}; }

const Family* find_family_hf(std::string_view model_type, std::string_view architecture) {
  for (const Family* f : all_families()) {
    for (const auto& t : f->hf_model_types)
      if (t == model_type) return f;
    for (const auto& a : f->hf_architectures)
      if (a == architecture) return f;
  }
  return nullptr;
}

const Family* find_family_gguf(std::string_view arch) {
  for (const Family* f : all_families())
    if (f->gguf_arch == arch) return f;
  return nullptr;
}

std::string family_names() {
  std::string s;
  for (const Family* f : all_families()) s += (s.empty() ? "" : ", ") + f->name;
  return s;
}

std::string layer_name(const std::string& pattern, int64_t layer) {
  std::string s = pattern;
  const auto at = s.find("{layer}");
  if (at != std::string::npos) s.replace(at, 7, std::to_string(layer));
  return s;
}

}  // namespace spore::nlp::models
