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
#include "serve/metrics.h"
#include "serve/worker.h"
#include "spore/nlp/embed.h"
#include "spore/nlp/model.h"
#include "spore/serve.h"

namespace spore::serve {

struct Server::Impl {
  ServeOptions options;
  HttpServer http;
  std::unique_ptr<::spore::serve::http::HostCheck> host_check;  // made by bind(), once the port is known
  Metrics metrics;
  int port = -1;
  int64_t created = 0;  // unix seconds at start, for /v1/models

  std::atomic<bool> ready{false};
  std::mutex load_mu;
  std::string load_error;  // when loading failed: /health says why
  std::unique_ptr<nlp::LoadedModel> model;  // null when an encoder (embedding) model is served
  std::unique_ptr<Worker> worker;
  // The embedder (NOTE [Embeddings]): the encoder model itself, or a decoder's, made on first use.
  std::unique_ptr<nlp::EmbeddingModel> embedder;
  std::mutex embed_mu;  // one embedding pass at a time; guards `embedder`'s creation
  std::string model_id;
  std::vector<int32_t> chat_eos;
  nlp::SpeculativeOptions speculative;                 // requests' default (NOTE [Speculative decoding])
  std::shared_ptr<const nlp::LoadedModel> draft_model;  // ServeOptions::draft_model, loaded
  std::atomic<uint64_t> next_id{1};

  void routes();
  void load();
  void require_ready() const;  // ApiError 503 while loading
  void require_generator() const;  // ApiError 400 when the model is an encoder (embeddings only)
  const nlp::Tokenizer& tokenizer() const;  // the served model's
  // embeddings.cc: /v1/embeddings and /v1/rerank, each handler wrapped by `guard`.
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  void embedding_routes(const std::function<HttpServer::Handler(Handler)>& guard);
  const nlp::EmbeddingModel& embedding_model();
  void completion(const httplib::Request& req, httplib::Response& res, bool chat);
  std::string render_chat(const nlohmann::json& messages, const nlohmann::json& tools) const;
};

// Sends an error object with its status.
void send_error(httplib::Response& res, const ApiError& e);
void send_json(httplib::Response& res, const nlohmann::json& j, int status = 200);
// JSON text that never throws on odd bytes (replaced by U+FFFD).
std::string dump(const nlohmann::json& j);

}  // namespace spore::serve
