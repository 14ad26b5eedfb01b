// Memory figures before allocation (NOTE [Generation]).
#include "nlp/generate/memory_plan.h"

#include <algorithm>
#include <cstdio>

#include "nlp/models/family.h"
#include "spore/error.h"

namespace spore::nlp {

std::string format_bytes(uint64_t b) {
  char buf[32];
  if (b < 1000) std::snprintf(buf, sizeof buf, "%llu B", (unsigned long long)b);
  else if (b < 1000000) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else if (b < 1000000000) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

namespace detail {

uint64_t scratch_estimate(const ModelConfig& c, int64_t rows, int64_t logit_rows) {
  // The family knows its projections' widths (latent attention's differ); a config no family
  // made (tests' own models) gets the plain decoder's.
  const models::Family* fam = models::find_family(c.family);
  const auto [q, kv] = (fam ? fam : &models::llama_family())->projection_widths(c);
  const int64_t per_row = 4 * c.hidden_size + q + kv + 3 * c.intermediate_size;
  return 4ull * (uint64_t)(rows * per_row + logit_rows * c.vocab_size);
}

MemoryReport plan_memory(const CausalLM& lm, const EngineOptions& options, int64_t context) {
  MemoryReport r = lm.weight_memory();
  r.kv_cache = lm.kv_bytes_per_token(options.kv_dtype) * (uint64_t)options.slots * (uint64_t)context;
  const int64_t rows = std::min(options.prefill_chunk, context) * options.slots;
  r.scratch = std::max(r.scratch, scratch_estimate(lm.config(), rows, options.slots));
  return r;
}

void check_memory(const CausalLM& lm, const EngineOptions& options, int64_t context, const MemoryReport& plan,
                  uint64_t max_memory) {
  if (plan.total() <= max_memory) return;
  // The largest context whose plan fits (scratch shrinks with the context too when the context
  // is below the prefill chunk), by bisection over the monotone total.
  int64_t lo = 0, hi = context;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (plan_memory(lm, options, mid).total() <= max_memory) lo = mid;
    else hi = mid - 1;
  }
  const std::string fits = lo > 0 ? "at most " + std::to_string(lo) + " tokens of context fit"
                                  : "not even the weights fit";
  throw Error(ErrorCode::kValue,
              "max memory " + format_bytes(max_memory) + " (" + std::to_string(max_memory) + " bytes) is too small for " +
                  std::to_string(options.slots) + " slot(s) of " + std::to_string(context) +
                  " tokens: weights " + format_bytes(plan.weights_mapped + plan.weights_resident) + " (mapped " +
                  format_bytes(plan.weights_mapped) + ", resident " + format_bytes(plan.weights_resident) +
                  ") + KV cache " + format_bytes(plan.kv_cache) + " + scratch " + format_bytes(plan.scratch) +
                  " = " + format_bytes(plan.total()) + "; " + fits +
                  " (lower --context, or raise --max-memory); nothing was allocated");
}

}  // namespace detail
}  // namespace spore::nlp
