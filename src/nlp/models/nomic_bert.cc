// The `nomic-bert` encoder family (NOTE [Embeddings]): nomic-embed-text's encoder - rotary
// positions (NeoX halves, base rotary_emb_base), one fused Wqkv projection without biases, SwiGLU
// MLP (fc11 the up projection, fc12 the gate, fc2 down: transformers' own renaming of these
// names), post-layer LayerNorms, token types, no position rows. Config and weights in the hub's
// spelling (n_embd, n_head, ...; encoder.layers.N.attn.Wqkv), the fields transformers 5 spells
// otherwise accepted too; GGUF `nomic-bert` as llama.cpp's converter writes it.
#include "nlp/models/encoder.h"

#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp::models {

namespace {

class NomicBert final : public EncoderFamily {
 public:
  NomicBert() : EncoderFamily("nomic-bert", {"nomic_bert"}, {"NomicBertModel"}, "nomic-bert") {
    names.token_embd = {"embeddings.word_embeddings", "token_embd"};
    names.type_embd = {"embeddings.token_type_embeddings", "token_types"};
    names.embd_norm = {"emb_ln", "token_embd_norm"};
    names.qkv = {"encoder.layers.{layer}.attn.Wqkv", "blk.{layer}.attn_qkv"};
    names.attn_out = {"encoder.layers.{layer}.attn.out_proj", "blk.{layer}.attn_output"};
    names.attn_out_norm = {"encoder.layers.{layer}.norm1", "blk.{layer}.attn_output_norm"};
    names.up = {"encoder.layers.{layer}.mlp.fc11", "blk.{layer}.ffn_up"};
    names.gate = {"encoder.layers.{layer}.mlp.fc12", "blk.{layer}.ffn_gate"};
    names.down = {"encoder.layers.{layer}.mlp.fc2", "blk.{layer}.ffn_down"};
    names.out_norm = {"encoder.layers.{layer}.norm2", "blk.{layer}.layer_output_norm"};
  }

  void read_hf(const nlohmann::json& cfg, EncoderConfig& c) const override {
    const std::string& s = c.source;
    c.vocab_size = hf_int(cfg, {"vocab_size"}, s);
    c.hidden_size = hf_int(cfg, {"n_embd", "hidden_size"}, s);
    c.intermediate_size = hf_int(cfg, {"n_inner", "intermediate_size"}, s);
    c.num_layers = hf_int(cfg, {"n_layer", "num_hidden_layers"}, s);
    c.num_heads = hf_int(cfg, {"n_head", "num_attention_heads"}, s);
    c.max_positions = hf_int(cfg, {"n_positions", "max_position_embeddings"}, s, 2048);
    c.type_vocab_size = hf_int(cfg, {"type_vocab_size"}, s, 2);
    c.layer_norm_eps = hf_num(cfg, {"layer_norm_epsilon", "layer_norm_eps"}, s, 1e-12);
    c.rope_theta = hf_num(cfg, {"rotary_emb_base"}, s, 1000.0);
    if (auto rp = cfg.find("rope_parameters"); rp != cfg.end() && rp->is_object())
      c.rope_theta = hf_num(*rp, {"rope_theta"}, s, c.rope_theta);
    c.activation = "swiglu";
    c.fused_qkv = true;
    c.qkv_bias = c.out_bias = c.mlp_bias = false;
    auto is = [&](const char* k, bool v) { return !cfg.contains(k) || (cfg[k].is_boolean() && cfg[k].get<bool>() == v); };
    if (!is("prenorm", false) || !is("qkv_proj_bias", false) || !is("mlp_fc1_bias", false) || !is("mlp_fc2_bias", false) ||
        !is("rotary_emb_interleaved", false) || !is("causal", false))
      throw Error(ErrorCode::kUnsupported, s + ": only nomic-embed-text's layout is supported (prenorm, biases, "
                                                "interleaved rope and causal all false)");
    if (cfg.contains("rotary_emb_fraction") && hf_num(cfg, {"rotary_emb_fraction"}, s, 1.0) != 1.0)
      throw Error(ErrorCode::kUnsupported, s + ": rotary_emb_fraction other than 1 (partial rope) is not supported");
    if (const std::string act = cfg.value("activation_function", "swiglu"); act != "swiglu")
      throw Error(ErrorCode::kUnsupported, s + ": activation_function \"" + act + "\" (nomic-bert: swiglu; the MoE "
                                                "variant is not supported)");
  }

  void read_gguf(const GgufFile& g, EncoderConfig& c) const override {
    const std::string key = c.architecture + ".rope.freq_base";
    c.rope_theta = g.contains(key) ? g.get_float(key) : 1000.0;
    c.activation = "swiglu";
    c.fused_qkv = true;
    c.qkv_bias = c.out_bias = c.mlp_bias = false;
  }
};

}  // namespace

const EncoderFamily& nomic_bert_encoder_family() {
  static const NomicBert f;
  return f;
}

}  // namespace spore::nlp::models
