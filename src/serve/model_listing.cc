#include "serve/model_listing.h"

namespace spore::serve {

using nlohmann::json;

json model_list(const ModelRegistry& registry, int64_t created, int64_t slots) {
  json data = json::array();
  for (const ModelRegistry::Status& s : registry.status()) {
    json m = {{"id", s.name}, {"object", "model"}, {"created", created}, {"owned_by", "spore"}};
    json status = {{"state", s.state}};
    if (s.bytes) status["bytes"] = s.bytes;
    if (!s.error.empty()) status["error"] = s.error;
    m["status"] = std::move(status);
    if (const ModelInstance* inst = s.instance.get()) {
      if (inst->model) {
        m["meta"] = {{"n_ctx", inst->worker->context()},
                     {"n_vocab", inst->model->lm->config().vocab_size},
                     {"family", inst->model->lm->config().family},
                     {"format", inst->model->format},
                     {"slots", slots}};
      } else if (const nlp::EmbeddingModel* e = inst->embedder.get()) {
        m["meta"] = {{"n_ctx", e->context()},     {"n_vocab", e->tokenizer().vocab_size()},
                     {"family", e->family()},     {"format", e->format()},
                     {"n_embd", e->dimensions()}, {"pooling", nlp::pooling_name(e->pooling())}};
      }
    }
    data.push_back(std::move(m));
  }
  return {{"object", "list"}, {"data", data}};
}

Gauges loaded_gauges(const ModelRegistry& registry) {
  Gauges sum;
  for (const ModelRegistry::Status& s : registry.status()) {
    if (!s.instance || !s.instance->worker) continue;
    const Gauges g = s.instance->worker->gauges();
    sum.queue_depth += g.queue_depth;
    sum.active_slots += g.active_slots;
    sum.slots += g.slots;
    sum.kv_tokens_used += g.kv_tokens_used;
    sum.kv_tokens_capacity += g.kv_tokens_capacity;
    sum.prefix_cache_tokens_held += g.prefix_cache_tokens_held;
    sum.kv_bytes += g.kv_bytes;
  }
  return sum;
}

}  // namespace spore::serve
