// The weight names the families share (each family's file starts from them), and the layer
// numbers in their patterns.
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
  n.o_bias = {L + "self_attn.o_proj.bias", B + "attn_output.bias"};
  n.q_norm = {L + "self_attn.q_norm.weight", B + "attn_q_norm.weight"};
  n.k_norm = {L + "self_attn.k_norm.weight", B + "attn_k_norm.weight"};
  n.ffn_norm = {L + "post_attention_layernorm.weight", B + "ffn_norm.weight"};
  n.gate = {L + "mlp.gate_proj.weight", B + "ffn_gate.weight"};
  n.up = {L + "mlp.up_proj.weight", B + "ffn_up.weight"};
  n.down = {L + "mlp.down_proj.weight", B + "ffn_down.weight"};
  // Qwen's mixture-of-experts spelling (qwen2moe, qwen3moe, deepseek2 but its shared experts).
  n.router = {L + "mlp.gate.weight", B + "ffn_gate_inp.weight"};
  n.expert_bias = {L + "mlp.gate.e_score_correction_bias", B + "exp_probs_b.bias"};
  n.gate_exps = {L + "mlp.experts.{expert}.gate_proj.weight", B + "ffn_gate_exps.weight"};
  n.up_exps = {L + "mlp.experts.{expert}.up_proj.weight", B + "ffn_up_exps.weight"};
  n.down_exps = {L + "mlp.experts.{expert}.down_proj.weight", B + "ffn_down_exps.weight"};
  n.gate_shexp = {L + "mlp.shared_expert.gate_proj.weight", B + "ffn_gate_shexp.weight"};
  n.up_shexp = {L + "mlp.shared_expert.up_proj.weight", B + "ffn_up_shexp.weight"};
  n.down_shexp = {L + "mlp.shared_expert.down_proj.weight", B + "ffn_down_shexp.weight"};
  n.shexp_gate = {L + "mlp.shared_expert_gate.weight", B + "ffn_gate_inp_shexp.weight"};
  return n;
}

std::vector<const TensorName*> WeightNames::all() const {
  return {&embed, &final_norm, &lm_head, &attn_norm, &q,        &k,    &v,    &o,         &q_bias,
          &k_bias, &v_bias,    &o_bias,  &q_norm,    &k_norm,   &ffn_norm, &gate, &up,   &down,
          &post_attn_norm, &post_ffn_norm, &q_a,    &q_a_norm,  &q_b,     &kv_a,      &kv_a_norm, &kv_b,
          &k_b, &v_b, &router, &expert_bias, &gate_exps, &up_exps, &down_exps, &gate_shexp, &up_shexp,
          &down_shexp, &shexp_gate, &qkv, &gate_up};
}

std::string layer_name(const std::string& pattern, int64_t layer) {
  std::string s = pattern;
  const auto at = s.find("{layer}");
  if (at != std::string::npos) s.replace(at, 7, std::to_string(layer));
  return s;
}

}  // namespace spore::nlp::models
