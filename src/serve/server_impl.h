// Server internals shared by the route files (server.cc: set-up and small routes,
// completions.cc: the two completion routes, JSON and SSE).
#pragma once
#include <httplib.h>  // Request, Response, DataSink: the handlers' types (NOTE [HTTP transport])

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "serve/api_error.h"
#include "serve/http_host_check.h"
#include "serve/http_server.h"
#include "serve/lora_adapters.h"
#include "serve/metrics.h"
#include "serve/model_registry.h"
#include "serve/worker.h"
#include "spore/nlp/embed.h"
#include "spore/nlp/model.h"
#include "spore/serve.h"

namespace spore::serve {

struct Server::Impl {
  ServeOptions options;
  // Before `http`, so it outlives the handlers' leases (NOTE [Many models]).
  std::unique_ptr<ModelRegistry> registry;
  bool load_at_start = false;  // one model (--model or the default): loaded before serving, as ever
  HttpServer http;
  std::unique_ptr<::spore::serve::http::HostCheck> host_check;  // made by bind(), once the port is known
  Metrics metrics;
  int port = -1;
  int64_t created = 0;  // unix seconds at start, for /v1/models

  std::atomic<bool> ready{false};
  std::mutex load_mu;
  std::string load_error;  // when loading failed: /health says why
  nlp::SpeculativeOptions speculative;                 // requests' default (NOTE [Speculative decoding])
  std::shared_ptr<const nlp::LoadedModel> draft_model;  // ServeOptions::draft_model, loaded
  LoraAdapters lora;  // ServeOptions::lora, loaded for the model (NOTE [LoRA adapters])
  std::atomic<uint64_t> next_id{1};

  // A request's model, held (never unloaded) while this lives (NOTE [Many models]).
  struct Lease {
    std::shared_ptr<ModelRegistry::Lease> held;
    ModelInstance* operator->() const { return &held->instance(); }
    const std::string& name() const { return held->name(); }
  };
  void routes();
  void load();  // the server-wide parts (draft model), then the one model when load_at_start
  std::unique_ptr<ModelInstance> load_instance(const ModelSource& source);  // the registry's loader
  // The model a request body names ("model"; absent: the only one served), loaded and held.
  Lease lease_for(const nlohmann::json& body);
  void require_ready() const;  // ApiError 503 while loading
  void require_generator(const Lease& m) const;  // ApiError 400 when the model is an encoder (embeddings only)
  const nlp::Tokenizer& tokenizer(const Lease& m) const;  // the model's
  // embeddings.cc: /v1/embeddings and /v1/rerank, each handler wrapped by `guard`.
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void embedding_routes(const std::function<HttpServer::Handler(Handler)>& guard);
  const nlp::EmbeddingModel& embedding_model(const Lease& m);
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);
  std::string render_chat(const Lease& m, const nlohmann::json& messages, const nlohmann::json& tools) const;
};

// Sends an error object with its status.
void send_error(httplib::Response& res, const ApiError& e);
void send_json(httplib::Response& res, const nlohmann::json& j, int status = 200);
// JSON text that never throws on odd bytes (replaced by U+FFFD).
std::string dump(const nlohmann::json& j);

}  // namespace spore::serve
