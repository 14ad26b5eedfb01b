// The models `spore serve` holds in memory (NOTE [Many models]): loaded on a request's first use,
// unloaded least-recently-used when --max-memory would be exceeded, never while a request holds
// one. The registry knows a model's contents only as a `ModelInstance` made by the server's
// loader and its byte count (from the engine's memory report), so its policy is testable with a
// fake loader (tests/serve/model_registry_test.cc).
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "serve/model_catalog.h"
#include "serve/worker.h"
#include "spore/nlp/embed.h"
#include "spore/nlp/model.h"

namespace spore::serve {

// One loaded model: a decoder (model + its worker, the embedder made on the first embedding
// request) or an encoder (embedder only).
struct ModelInstance {
  std::unique_ptr<nlp::LoadedModel> model;  // null for an encoder (embedding) model
  std::unique_ptr<Worker> worker;           // the model's own queue and engine thread
  std::unique_ptr<nlp::EmbeddingModel> embedder;
  std::mutex embed_mu;  // one embedding pass at a time; guards `embedder`'s creation
  std::vector<int32_t> chat_eos;
  uint64_t bytes = 0;  // memory reports: weights + KV cache + scratch (+ the embedder once made)
  // Members are destroyed in reverse: the worker (its thread joined) before the model it reads.
};

class ModelRegistry {
 public:
  using Loader = std::function<std::unique_ptr<ModelInstance>(const ModelSource&)>;
  struct Options {
    uint64_t max_memory = 0;  // bytes of loaded models together; 0: no limit
    // How long a load waits for busy models to finish before it gives up (503).
    std::chrono::milliseconds wait_for_room{60000};
  };
  ModelRegistry(std::vector<ModelSource> catalogue, Options options, Loader loader);
  ~ModelRegistry();

  // A model held for one request: it stays loaded until the lease is destroyed.
  class Lease {
   public:
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    const std::string& name() const;
    ModelInstance& instance() const { return *instance_; }
    ModelInstance* operator->() const { return instance_.get(); }
    // The instance grew (a decoder's embedder was made): counted, and idle models are unloaded
    // to keep under --max-memory where they can be.
    void grew(uint64_t bytes);

   private:
    friend class ModelRegistry;
    Lease(ModelRegistry& r, size_t index, std::shared_ptr<ModelInstance> inst)
        : registry_(r), index_(index), instance_(std::move(inst)) {}
    ModelRegistry& registry_;
    size_t index_;
    std::shared_ptr<ModelInstance> instance_;
  };

  // The named model, loaded first when it is not. ApiError: 404 model_not_found for a name not in
  // the catalogue; 507 model_too_large when it alone exceeds --max-memory; 500 model_load_failed
  // naming the file when it fails to load (remembered: later requests get the same answer at
  // once); 503 model_busy when the models in use leave no room for it within wait_for_room.
  // Other models keep serving meanwhile (the load runs without the registry's lock).
  std::shared_ptr<Lease> acquire(std::string_view name);

  struct Status {
    std::string name, path;
    std::string state;       // "loaded", "loading", "unloaded", "failed", "too_large"
    uint64_t bytes = 0;      // while loaded (or the last load's, once known)
    int64_t in_use = 0;      // leases held now
    std::string error;       // why it failed or does not fit
    std::shared_ptr<ModelInstance> instance;  // while loaded
  };
  std::vector<Status> status() const;
  const std::vector<ModelSource>& catalogue() const { return catalogue_; }
  uint64_t loaded_bytes() const;
  void unload_all();  // no lease may be held (the server has stopped)

 private:
  struct Entry {
    ModelSource source;
    std::shared_ptr<ModelInstance> instance;
    bool loading = false;
    bool too_large = false;
    std::string error;
    uint64_t bytes = 0;  // the last load's, kept after unloading (a reload makes room first)
    int64_t in_use = 0;
    uint64_t last_used = 0;
  };
  void release(size_t index);
  uint64_t used_locked() const;
  // Unloads idle models (least recently used first, never `keep`) until `need` more bytes fit;
  // their instances go to `out` (destroyed by the caller after unlocking). Whether they fit.
  bool make_room_locked(uint64_t need, size_t keep, std::vector<std::shared_ptr<ModelInstance>>& out);

  const std::vector<ModelSource> catalogue_;
  const Options options_;
  const Loader loader_;
  mutable std::mutex mu_;
  std::condition_variable cv_;  // a load finished or a lease was released
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;  // last_used stamps
};

}  // namespace spore::serve
