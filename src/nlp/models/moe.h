// The mixture-of-experts block (NOTE [Mixture of experts] in docs/design.md): a router picks
// top_k of the layer's experts per token, each chosen expert's SwiGLU MLP runs on the tokens
// routed to it (its slice of the 3-D GGUF tensor, or its own Hugging Face tensors), and the
// outputs are summed with the router's weights; shared experts (an always-on MLP, optionally
// behind a sigmoid gate) are added. Families say which options their layers take (blocks.h's
// LayerSpec::moe); the decoder runs `moe` in place of `mlp` for such a layer.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nlp/model_internal.h"
#include "spore/tensor.h"

namespace spore::nlp::models {

struct WeightNames;
struct BlockDims;

enum class Gating { kSoftmax, kSigmoid };  // the router's scores (llama.cpp's expert_gating_func 1 / 2)

struct MoeOptions {
  int64_t experts = 0;     // > 0: the layer routes (0: a dense MLP)
  int64_t top_k = 0;       // experts per token
  int64_t expert_ffn = 0;  // each routed expert's intermediate size
  int64_t shared_ffn = 0;  // the shared experts' intermediate size, all of them as one MLP (0: none)
  bool shared_gate = false;     // qwen2moe: the shared MLP's output times sigmoid(x . w)
  Gating gating = Gating::kSoftmax;
  bool normalize = false;       // the chosen weights divided by their sum (norm_topk_prob)
  double scale = 1;             // the chosen weights times this (deepseek2's routed_scaling_factor)
  int64_t groups = 0, top_groups = 0;  // > 1: choose among the experts of the top_groups groups
                                       // (by their best score) only (group_limited_greedy)
};

struct MoeWeights {
  Weight router;                             // [experts, hidden]
  Tensor selection_bias;                     // [experts] added to the scores for the choice only
  std::vector<Weight> gate, up, down;        // per expert: [ffn, hidden], [ffn, hidden], [hidden, ffn]
  Weight shared_gate_proj, shared_up, shared_down;  // shared experts' MLP
  Weight shared_gate;                        // [1, hidden] (qwen2moe)
};

// The routing of `n` tokens: for token t, experts[t * top_k + j] with weights[t * top_k + j].
struct Routing {
  std::vector<int32_t> experts;
  std::vector<float> weights;
};

// The router's choice from its logits (float32 [n, experts], row-major), as transformers'
// routers compute it: scores (softmax / sigmoid), the top_k (after the group limit), renormalised
// and scaled as the options say. kInternal if a chosen index falls outside the table.
Routing route(const std::vector<float>& logits, int64_t n, const MoeOptions& o, const std::vector<float>& bias = {});

// The layer's expert tensors by the family's names; kFormat / kShape from the store naming the
// tensor (a 3-D GGUF tensor whose leading dimension is not the expert count among them).
MoeWeights load_moe(WeightStore& ws, const WeightNames& names, bool gguf, int64_t layer, const MoeOptions& o,
                    int64_t hidden);

// y [N, hidden] -> [N, hidden]. Tokens are grouped by expert, so each chosen expert's weights are
// read once per call whatever the number of tokens routed to it; unchosen experts are not read.
Tensor moe(const MoeWeights& w, const MoeOptions& o, const Tensor& y, bool ggml);

}  // namespace spore::nlp::models

namespace spore {
class GgufFile;
class GgufWriter;
}

namespace spore::nlp::models {

// The routing hyperparameters every MoE family shares, in ModelConfig::extra under canonical
// names: num_experts, num_experts_per_tok, moe_intermediate_size, norm_topk_prob,
// shared_expert_intermediate_size. From config.json (`experts_key` names the family's count:
// num_experts, num_local_experts, n_routed_experts; `ffn_key` its experts' width) and from GGUF
// (expert_count, expert_used_count, expert_feed_forward_length (else feed_forward_length),
// expert_shared_feed_forward_length). kFormat naming the field.
void read_moe_hf(const nlohmann::json& cfg, ModelConfig& c, const char* experts_key, const char* ffn_key);
void read_moe_gguf(const GgufFile& g, ModelConfig& c);
// Qwen's dense layers among the experts' (mlp_only_layers, decoder_sparse_step > 1): kUnsupported
// naming the field (llama.cpp runs every layer as experts too).
void refuse_dense_layers(const nlohmann::json& cfg, const ModelConfig& c);
// The options from those (softmax gating, no groups, scale 1); kFormat when top-k is not within
// 1..experts or a width is not positive.
MoeOptions moe_options(const ModelConfig& c);
// spore convert's <arch>.expert_count / expert_used_count (and, with `widths`, the experts' and the
// shared expert's feed_forward lengths), as llama.cpp's converter writes them.
void write_moe_gguf(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool widths);
void validate_moe(const ModelConfig& c);

}  // namespace spore::nlp::models
