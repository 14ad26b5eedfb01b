// The training forward's blocks (NOTE [LoRA training]): the engine's layer composition
// (models::LayerSpec, the weights models::load_layer reads) run without a KV cache, so that k and
// v reach attention directly and carry gradients, with LoRA adapters beside the frozen
// projections. One function per block type, shared by every family the decoder composes.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "nlp/model_internal.h"
#include "nlp/models/blocks.h"
#include "spore/llm.h"
#include "spore/tensor.h"

namespace spore::nlp::lora_blocks {

// The adapters of one layer by PEFT target name (absent: no adapter there), and how to apply them.
struct LayerAdapters {
  std::map<std::string, std::pair<Tensor, Tensor>> ab;  // target -> (A [r, in], B [out, r])
  double scaling = 1;
  double dropout = 0;
  uint64_t dropout_key = 0;  // picks the masks; 0: evaluation, no dropout
  int64_t layer = 0;
  bool bf16 = false;         // products in bfloat16 (LoraConfig::bf16, NOTE [bf16 LoRA training])
};

// x [N, in] through the frozen weight, plus scaling * B A dropout(x) when `target` has an adapter.
Tensor lora_linear(const Tensor& x, const Weight& w, const LayerAdapters& a, const std::string& target);

// The rope tables the attention block uses.
struct RopeTables {
  Tensor inv;         // [rope_dim / 2]
  RopeOptions options;
};

// Attention block: x [N, hidden] (already normed) -> the output projection's result [N, hidden].
// x holds `segments` sequences packed one after another (their lengths sum to N; pos restarts at 0
// for each): every projection runs on all N rows at once, attention per sequence, so no token
// sees another sequence's (NOTE [Packed training batches]). Empty segments: one sequence.
Tensor train_attention(const models::LayerWeights& w, const models::AttentionOptions& o, const models::BlockDims& d,
                       const Tensor& x, const Tensor& pos, const RopeTables& rope, double default_scale,
                       const LayerAdapters& a, const std::vector<int64_t>& segments = {});

// MLP block: y [N, hidden] (already normed) -> [N, hidden].
Tensor train_mlp(const models::LayerWeights& w, const models::MlpOptions& o, const Tensor& y, const LayerAdapters& a);

}  // namespace spore::nlp::lora_blocks
