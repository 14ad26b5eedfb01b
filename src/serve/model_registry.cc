// Loading on first use, least-recently-used unloading under --max-memory (NOTE [Many models]).
// Loads and unloads (a worker's thread joined, weights unmapped) run without the lock, so the
// other models' requests are never held up by them.
#include "serve/model_registry.h"

#include "serve/api_error.h"
#include "spore/nlp/generate.h"

namespace spore::serve {

namespace {

std::string bytes_text(uint64_t b) { return nlp::format_bytes(b); }

}  // namespace

ModelRegistry::ModelRegistry(std::vector<ModelSource> catalogue, Options options, Loader loader)
    : catalogue_(std::move(catalogue)), options_(options), loader_(std::move(loader)) {
  for (const ModelSource& s : catalogue_) {
    Entry e;
    e.source = s;
    entries_.push_back(std::move(e));
  }
}

ModelRegistry::~ModelRegistry() { unload_all(); }

const std::string& ModelRegistry::Lease::name() const { return registry_.catalogue_[index_].name; }

ModelRegistry::Lease::~Lease() {
  instance_.reset();
  registry_.release(index_);
}

void ModelRegistry::Lease::grew(uint64_t bytes) {
  std::vector<std::shared_ptr<ModelInstance>> unloaded;
  {
    std::lock_guard<std::mutex> lock(registry_.mu_);
    Entry& e = registry_.entries_[index_];
    e.bytes += bytes;
    instance_->bytes += bytes;
    if (registry_.options_.max_memory) registry_.make_room_locked(0, index_, unloaded);
  }
  unloaded.clear();  // destroyed here, unlocked
}

void ModelRegistry::release(size_t index) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry& e = entries_[index];
    --e.in_use;
    e.last_used = ++clock_;
  }
  cv_.notify_all();
}

uint64_t ModelRegistry::used_locked() const {
  uint64_t used = 0;
  for (const Entry& e : entries_)
    if (e.instance) used += e.bytes;
  return used;
}

uint64_t ModelRegistry::loaded_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_locked();
}

bool ModelRegistry::make_room_locked(uint64_t need, size_t keep, std::vector<std::shared_ptr<ModelInstance>>& out) {
  while (used_locked() + need > options_.max_memory) {
    Entry* victim = nullptr;
    for (size_t i = 0; i < entries_.size(); ++i) {
      Entry& e = entries_[i];
      if (i == keep || !e.instance || e.in_use > 0) continue;
      if (!victim || e.last_used < victim->last_used) victim = &e;
    }
    if (!victim) return false;
    out.push_back(std::move(victim->instance));
    victim->instance.reset();
  }
  return true;
}

std::shared_ptr<ModelRegistry::Lease> ModelRegistry::acquire(std::string_view name) {
  size_t index = entries_.size();
  for (size_t i = 0; i < entries_.size(); ++i)
    if (entries_[i].source.name == name) index = i;  // the catalogue is fixed: no lock needed
  if (index == entries_.size()) {
    std::string names;
    for (size_t i = 0; i < entries_.size() && i < 8; ++i) names += (i ? ", '" : "'") + entries_[i].source.name + "'";
    if (entries_.size() > 8) names += ", ...";
    // The name is echoed clipped: it is the client's text.
    throw ApiError(404, "The model '" + std::string(name.substr(0, 200)) + "' is not served here; GET /v1/models lists " +
                            names,
                   "invalid_request_error", "model", "model_not_found");
  }
  std::vector<std::shared_ptr<ModelInstance>> unloaded;  // destroyed unlocked, on every way out
  std::unique_lock<std::mutex> lock(mu_);
  Entry& e = entries_[index];
  const std::string file = e.source.path.string();
  while (true) {
    if (e.instance) {
      ++e.in_use;
      e.last_used = ++clock_;
      return std::shared_ptr<Lease>(new Lease(*this, index, e.instance));
    }
    if (e.too_large) throw ApiError(507, e.error, "server_error", "model", "model_too_large");
    if (!e.error.empty()) throw ApiError(500, e.error, "server_error", "model", "model_load_failed");
    if (!e.loading) break;
    cv_.wait(lock);  // another request is loading it
  }
  e.loading = true;
  // A model loaded before has a known size: room is made before loading it again.
  if (options_.max_memory && e.bytes && e.bytes <= options_.max_memory) make_room_locked(e.bytes, index, unloaded);
  lock.unlock();
  unloaded.clear();

  std::unique_ptr<ModelInstance> made;
  std::string failure;
  try {
    made = loader_(e.source);
  } catch (const std::exception& ex) {
    failure = ex.what();
  }
  lock.lock();
  auto give_up = [&](ApiError err, bool remember) {
    e.loading = false;
    if (remember) {
      e.error = err.what();
      e.too_large = err.status == 507;
    }
    lock.unlock();
    cv_.notify_all();
    made.reset();
    throw err;
  };
  if (!made)
    give_up(ApiError(500, "The model '" + e.source.name + "' (" + file + ") failed to load: " +
                              (failure.empty() ? std::string("no model") : failure) +
                              (entries_.size() > 1 ? ". The other models are served as before; fix or remove the file "
                                                     "and restart the server"
                                                   : ""),
                     "server_error", "model", "model_load_failed"),
            true);
  e.bytes = made->bytes;
  if (options_.max_memory && made->bytes > options_.max_memory)
    give_up(ApiError(507, "The model '" + e.source.name + "' (" + file + ") needs " + bytes_text(made->bytes) +
                              " (weights, KV cache and scratch, from the engine's memory report), more than --max-memory " +
                              bytes_text(options_.max_memory) + " even alone; raise --max-memory or lower --ctx / --slots",
                     "server_error", "model", "model_too_large"),
            true);
  if (options_.max_memory) {
    const auto deadline = std::chrono::steady_clock::now() + options_.wait_for_room;
    while (!make_room_locked(made->bytes, index, unloaded)) {
      // Every other loaded model is in use: wait for a request to finish (a lease released).
      if (cv_.wait_until(lock, deadline) == std::cv_status::timeout && !make_room_locked(made->bytes, index, unloaded)) {
        lock.unlock();
        unloaded.clear();
        lock.lock();
        give_up(ApiError(503, "The model '" + e.source.name + "' needs " + bytes_text(made->bytes) +
                                  " and the models in use leave less than that of --max-memory " +
                                  bytes_text(options_.max_memory) + "; retry when their requests have finished",
                         "server_error", "model", "model_busy"),
                false);
      }
    }
  }
  e.instance = std::shared_ptr<ModelInstance>(std::move(made));
  e.loading = false;
  ++e.in_use;
  e.last_used = ++clock_;
  auto lease = std::shared_ptr<Lease>(new Lease(*this, index, e.instance));
  lock.unlock();
  cv_.notify_all();
  unloaded.clear();
  return lease;
}

std::vector<ModelRegistry::Status> ModelRegistry::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Status> out;
  for (const Entry& e : entries_) {
    Status s;
    s.name = e.source.name;
    s.path = e.source.path.string();
    s.state = e.instance ? "loaded" : e.loading ? "loading" : e.too_large ? "too_large" : !e.error.empty() ? "failed" : "unloaded";
    s.bytes = e.bytes;
    s.in_use = e.in_use;
    s.error = e.error;
    s.instance = e.instance;
    out.push_back(std::move(s));
  }
  return out;
}

void ModelRegistry::unload_all() {
  std::vector<std::shared_ptr<ModelInstance>> unloaded;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Entry& e : entries_)
      if (e.instance) unloaded.push_back(std::move(e.instance));
  }
}

}  // namespace spore::serve
