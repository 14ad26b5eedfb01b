// What an engine will occupy, worked out before anything is allocated (NOTE [Generation]):
// the model's weights as loaded, the KV cache for the slots and context asked for, and an
// estimate of the activations of the largest forward pass the engine runs.
#pragma once
#include <cstdint>
#include <string>

#include "spore/nlp/generate.h"

namespace spore::nlp::detail {

// Float32 activations of one forward pass over `rows` tokens (hidden states, q/k/v, attention
// output, the MLP's gate/up/product) plus `logit_rows` rows of logits. An upper estimate: the
// kernels reuse buffers as they go, and attention is tiled so scores are never [S, context].
uint64_t scratch_estimate(const ModelConfig& c, int64_t rows, int64_t logit_rows);

// The figures for an engine over `lm` (context already resolved).
MemoryReport plan_memory(const CausalLM& lm, const EngineOptions& options, int64_t context);

// kValue with every figure, and the largest context that would fit, when plan.total() exceeds
// max_memory.
void check_memory(const CausalLM& lm, const EngineOptions& options, int64_t context, const MemoryReport& plan,
                  uint64_t max_memory);

}  // namespace spore::nlp::detail
