// A test CausalLM for the generation tests (no weights): its next-token logits are a function of
// the whole token history that the test also computes on its own, and it reads that history
// back from its KV cache (token ids stored in the key rows). So a chunk sent to the wrong slot or
// position, a cache row never written, or a sequence mixed with another changes the logits and
// shows up as different tokens.
#pragma once
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/model.h"

namespace spore::test {

using LogitsFn = std::function<std::vector<float>(std::span<const int32_t> history)>;

class HistoryLM : public nlp::CausalLM {
 public:
  HistoryLM(int64_t vocab, LogitsFn fn, int64_t max_position = 256) : fn_(std::move(fn)) {
    config_.family = "test";
    config_.architecture = "HistoryLM";
    config_.vocab_size = vocab;
    config_.hidden_size = 8;
    config_.intermediate_size = 16;
    config_.num_layers = 1;
    config_.num_heads = 2;
    config_.num_kv_heads = 1;
    config_.head_dim = 4;
    config_.max_position_embeddings = max_position;
    config_.source = "<test HistoryLM>";
  }

  const nlp::ModelConfig& config() const override { return config_; }
  nlp::ModelConfig& mutable_config() { return config_; }

  std::unique_ptr<nlp::KvCache> make_cache(int64_t slots, int64_t context, DType) const override {
    ++caches_made;
    std::vector<float> empty((size_t)(slots * context), -1.0f);
    Tensor k = Tensor::from_vector(empty, Shape{slots, 1, context, 1});
    Tensor v = Tensor::from_vector(std::vector<float>(empty.size(), 0.0f), Shape{slots, 1, context, 1});
    auto cache = std::make_unique<nlp::KvCache>(std::vector<Tensor>{k}, std::vector<Tensor>{v});
    latest_cache = cache.get();
    return cache;
  }
  uint64_t kv_bytes_per_token(DType) const override { return 2 * sizeof(float); }
  nlp::MemoryReport weight_memory() const override {
    nlp::MemoryReport r;
    r.weights_mapped = weights_mapped;
    return r;
  }

  Tensor forward(std::span<const nlp::SequenceChunk> chunks, nlp::KvCache& cache) override {
    calls.emplace_back();
    // The engine runs every step on the cache it made at construction, never a copy.
    if (&cache != latest_cache) throw Error(ErrorCode::kInternal, "HistoryLM: forward on a cache it did not make last");
    const Tensor& keys = cache.keys(0);
    const int64_t slots = keys.size(0), context = keys.size(2);
    float* rows = keys.data<float>();
    const int64_t vocab = config_.vocab_size;
    std::vector<float> out;
    for (const nlp::SequenceChunk& c : chunks) {
      calls.back().push_back({c.slot, c.position, (int64_t)c.tokens.size()});
      if (c.slot < 0 || c.slot >= slots) throw Error(ErrorCode::kValue, "HistoryLM: slot out of range");
      if (c.position + (int64_t)c.tokens.size() > context) throw Error(ErrorCode::kValue, "HistoryLM: past the context");
      float* row = rows + c.slot * context;
      for (int64_t p = 0; p < c.position; ++p)
        if (row[p] < 0) throw Error(ErrorCode::kInternal, "HistoryLM: cache row " + std::to_string(p) + " never written");
      for (size_t i = 0; i < c.tokens.size(); ++i) {
        if (c.tokens[i] < 0 || c.tokens[i] >= vocab) throw Error(ErrorCode::kValue, "HistoryLM: token out of range");
        row[c.position + (int64_t)i] = (float)c.tokens[i];
      }
      std::vector<int32_t> history;
      for (int64_t p = 0; p < c.position; ++p) history.push_back((int32_t)row[p]);
      // all_logits: a row after each of the chunk's tokens (speculative verification), else the last.
      for (size_t i = 0; i < c.tokens.size(); ++i) {
        history.push_back((int32_t)row[c.position + (int64_t)i]);
        if (!c.all_logits && i + 1 < c.tokens.size()) continue;
        const std::vector<float> l = fn_(history);
        out.insert(out.end(), l.begin(), l.end());
        ++rows_out;
      }
    }
    return Tensor::from_vector(out, Shape{(int64_t)out.size() / vocab, vocab});
  }

  struct Chunk {
    int32_t slot;
    int64_t position, tokens;
  };
  std::vector<std::vector<Chunk>> calls;  // per forward call, its chunks
  mutable int caches_made = 0;
  int64_t rows_out = 0;  // logits rows returned, over every call
  uint64_t weights_mapped = 1000;
  mutable const nlp::KvCache* latest_cache = nullptr;

 private:
  nlp::ModelConfig config_;
  LogitsFn fn_;
};

// A LoadedModel around a HistoryLM (and optionally a tokenizer).
inline nlp::LoadedModel loaded(std::shared_ptr<HistoryLM> lm, std::optional<nlp::Tokenizer> tok = std::nullopt) {
  nlp::LoadedModel m;
  m.path = "<test>";
  m.format = "test";
  m.lm = std::move(lm);
  m.tokenizer = std::move(tok);
  return m;
}

// Logits that depend on the whole history (order included), not just the last token: a HistoryLM
// over them makes a wrong or reordered cache row change the generated tokens.
inline std::vector<float> hash_logits(std::span<const int32_t> h, int64_t vocab) {
  uint64_t x = 1469598103934665603ull;
  for (int32_t t : h) x = (x ^ (uint64_t)t) * 1099511628211ull;
  std::vector<float> l((size_t)vocab);
  for (int64_t v = 0; v < vocab; ++v)
    l[(size_t)v] = (float)std::sin((double)((x >> 7) % 100003) * 0.013 + v * 0.7 + h.back() * 0.11) * 3.0f;
  return l;
}

inline constexpr int64_t kHashVocab = 64;
inline std::shared_ptr<HistoryLM> hash_lm(int64_t max_position = 256) {
  return std::make_shared<HistoryLM>(kHashVocab, [](std::span<const int32_t> h) { return hash_logits(h, kHashVocab); },
                                     max_position);
}

}  // namespace spore::test
