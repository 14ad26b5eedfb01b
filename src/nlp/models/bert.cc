// The `bert` encoder family (NOTE [Embeddings]): BERT and the models built on its shape
// (MiniLM, BGE, GTE-base, e5, cross-encoders): absolute position rows, token types, separate
// q/k/v with biases, GELU MLP, post-layer LayerNorms. Hugging Face BertModel /
// BertForSequenceClassification names, and GGUF `bert` as llama.cpp's converter writes it
// (gguf-py's tensor_mapping.py; a classifier as cls.output, its pooler as cls when present).
#include "nlp/models/encoder.h"

#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp::models {

namespace {

class Bert final : public EncoderFamily {
 public:
  Bert() : EncoderFamily("bert", {"bert"}, {"BertModel", "BertForSequenceClassification", "BertForMaskedLM"}, "bert") {
    names.token_embd = {"embeddings.word_embeddings", "token_embd"};
    names.position_embd = {"embeddings.position_embeddings", "position_embd"};
    names.type_embd = {"embeddings.token_type_embeddings", "token_types"};
    names.embd_norm = {"embeddings.LayerNorm", "token_embd_norm"};
    names.q = {"encoder.layer.{layer}.attention.self.query", "blk.{layer}.attn_q"};
    names.k = {"encoder.layer.{layer}.attention.self.key", "blk.{layer}.attn_k"};
    names.v = {"encoder.layer.{layer}.attention.self.value", "blk.{layer}.attn_v"};
    names.attn_out = {"encoder.layer.{layer}.attention.output.dense", "blk.{layer}.attn_output"};
    names.attn_out_norm = {"encoder.layer.{layer}.attention.output.LayerNorm", "blk.{layer}.attn_output_norm"};
    names.up = {"encoder.layer.{layer}.intermediate.dense", "blk.{layer}.ffn_up"};
    names.down = {"encoder.layer.{layer}.output.dense", "blk.{layer}.ffn_down"};
    names.out_norm = {"encoder.layer.{layer}.output.LayerNorm", "blk.{layer}.layer_output_norm"};
    names.pooler = {"pooler.dense", "cls"};
    names.classifier = {"classifier", "cls.output"};
  }

  void read_hf(const nlohmann::json& cfg, EncoderConfig& c) const override {
    const std::string& s = c.source;
    c.vocab_size = hf_int(cfg, {"vocab_size"}, s);
    c.hidden_size = hf_int(cfg, {"hidden_size"}, s);
    c.intermediate_size = hf_int(cfg, {"intermediate_size"}, s);
    c.num_layers = hf_int(cfg, {"num_hidden_layers"}, s);
    c.num_heads = hf_int(cfg, {"num_attention_heads"}, s);
    c.max_positions = hf_int(cfg, {"max_position_embeddings"}, s, 512);
    c.type_vocab_size = hf_int(cfg, {"type_vocab_size"}, s, 2);
    c.layer_norm_eps = hf_num(cfg, {"layer_norm_eps"}, s, 1e-12);
    const std::string act = cfg.contains("hidden_act") && cfg["hidden_act"].is_string() ? cfg["hidden_act"].get<std::string>() : "gelu";
    if (act == "gelu")
      c.activation = "gelu";
    else if (act == "gelu_new" || act == "gelu_pytorch_tanh")
      c.activation = "gelu_tanh";
    else if (act == "relu")
      c.activation = "relu";
    else
      throw Error(ErrorCode::kUnsupported, s + ": hidden_act \"" + act + "\" (bert: gelu, gelu_new, gelu_pytorch_tanh, relu)");
    if (const std::string pe = cfg.value("position_embedding_type", "absolute"); pe != "absolute")
      throw Error(ErrorCode::kUnsupported, s + ": position_embedding_type \"" + pe + "\" (only absolute)");
    c.hf_prefix = "bert.";  // where a task head's checkpoint keeps the encoder (BertForSequenceClassification)
  }

  void read_gguf(const GgufFile&, EncoderConfig& c) const override {
    c.activation = "gelu";
  }
};

}  // namespace

const EncoderFamily& bert_encoder_family() {
  static const Bert f;
  return f;
}

}  // namespace spore::nlp::models
