// Set-up of the HTTP server, authentication, error answers, metrics, and the small routes
// (/health, /v1/models, /tokenize, /detokenize, /apply-template, /metrics, / and the chat page).
#include <openssl/crypto.h>
#include <strings.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "serve/request.h"
#include "serve/server_impl.h"
#include "serve/web_page.h"
#include "spore/context.h"
#include "spore/error.h"

namespace spore::serve {

using nlohmann::json;

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void send_json(httplib::Response& res, const json& j, int status) {
  res.status = status;
  res.set_content(dump(j), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) { send_json(res, e.to_json(), e.status); }

namespace {

// Routes named in the metrics; anything else counts as "other" (bounded label values).
std::string route_label(const std::string& path) {
  for (const char* r : {"/health", "/v1/models", "/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize",
                        "/apply-template", "/metrics", "/", "/v1/embeddings", "/v1/rerank"})
    if (path == r) return r;
  return "other";
}

// Constant-time comparison (the time does not depend on where the strings differ); the length
// is not secret.
bool key_matches(const std::string& given, const std::string& key) {
  return given.size() == key.size() && CRYPTO_memcmp(given.data(), key.data(), key.size()) == 0;
}

// "Bearer <key>": the scheme is case-insensitive (RFC 9110 11.1), one or more spaces follow it.
bool bearer_key_matches(const std::string& auth, const std::string& key) {
  if (auth.size() < 7 || strncasecmp(auth.c_str(), "bearer", 6) != 0 || auth[6] != ' ') return false;
  const size_t start = auth.find_first_not_of(' ', 6);
  return start != std::string::npos && key_matches(auth.substr(start), key);
}

// Host (the transport has put an absolute-form target's authority there) and a browser's Origin
// must name this server.
std::optional<ApiError> check_host_and_origin(const httplib::Request& req, const http::HostCheck& check) {
  const std::string host = req.get_header_value("Host");
  if (!host.empty() && !check.host_allowed(host))
    return ApiError(403, "Host '" + host.substr(0, 100) + "' is not a name of this server (" + check.describe() +
                             "); to serve it, start spore serve with --allowed-hosts and its name",
                    "invalid_request_error", "", "host_not_allowed");
  if (req.has_header("Origin") && !check.origin_allowed(req.get_header_value("Origin")))
    return ApiError(403, "Origin '" + req.get_header_value("Origin").substr(0, 100) +
                             "' is not allowed (a web page elsewhere may not drive this server); allowed: " +
                             check.describe() + " and names given with --allowed-hosts",
                    "invalid_request_error", "", "origin_not_allowed");
  return std::nullopt;
}

// Runs a handler, turning exceptions into error objects.
HttpServer::Handler guarded(std::function<void(const httplib::Request&, httplib::Response&)> fn) {
  return [fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    try {
      fn(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const Error& e) {
      const bool client = e.code() == ErrorCode::kValue || e.code() == ErrorCode::kFormat ||
                          e.code() == ErrorCode::kIndex || e.code() == ErrorCode::kUnsupported;
      send_error(res, ApiError(client ? 400 : 500, e.what(), client ? "invalid_request_error" : "server_error", "",
                               error_code_name(e.code())));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what(), "server_error"));
    }
  };
}

}  // namespace

void Server::Impl::require_ready() const {
  if (ready) return;
  std::string why = "The model is still loading; retry shortly";
  {
    auto& self = const_cast<Impl&>(*this);
    std::lock_guard<std::mutex> lock(self.load_mu);
    if (!load_error.empty()) why = "The model failed to load: " + load_error;
  }
  throw ApiError(503, why, "server_error", "", load_error.empty() ? "loading" : "load_failed");
}

void Server::Impl::require_generator() const {
  if (!model)
    throw ApiError(400, model_id + " is an embedding model (" + embedder->family() + "); it serves POST /v1/embeddings" +
                            (embedder->can_rerank() ? " and POST /v1/rerank" : "") + ", not text generation",
                   "invalid_request_error", "model", "model_not_generative");
}

const nlp::Tokenizer& Server::Impl::tokenizer() const { return model ? *model->tokenizer : embedder->tokenizer(); }

std::string Server::Impl::render_chat(const json& messages, const json& tools) const {
  if (!model->chat_template)
    throw ApiError(400, model->path.filename().string() + " carries no chat template; use /v1/completions",
                   "invalid_request_error", "messages", "no_chat_template");
  json kwargs = json::object();
  if (!tools.is_null()) kwargs["tools"] = tools;
  return model->chat_template->render(dump(messages), /*add_generation_prompt=*/true, dump(kwargs));
}

void Server::Impl::load() {
  try {
    set_num_threads(options.threads);
    nlp::LoadOptions lo;
    lo.allow_unverified = options.allow_unverified;
    lo.require_tokenizer = true;
    const std::filesystem::path path = options.model.empty() ? nlp::default_model_path() : std::filesystem::path(options.model);
    if (nlp::is_encoder_model(path)) {  // NOTE [Embeddings]: no engine, no worker
      nlp::EmbeddingLoadOptions eo;
      eo.allow_unverified = options.allow_unverified;
      auto e = std::make_unique<nlp::EmbeddingModel>(nlp::load_embedding_model(path, eo));
      std::fprintf(stderr, "spore serve: embedding model %s (%s, %s pooling, %lld dimensions) loaded\n",
                   path.filename().string().c_str(), e->family().c_str(), nlp::pooling_name(e->pooling()).c_str(),
                   (long long)e->dimensions());
      embedder = std::move(e);
      model_id = std::filesystem::is_directory(path) ? path.filename().string() : path.stem().string();
      ready = true;
      return;
    }
    auto m = std::make_unique<nlp::LoadedModel>(nlp::load_model(path, lo));
    std::string id = path.filename().string();
    if (std::filesystem::is_directory(path)) {
      for (const auto& e : std::filesystem::directory_iterator(path))
        if (e.path().extension() == ".gguf") id = e.path().stem().string();
    } else {
      id = path.stem().string();
    }
    // End of an answer: the artifact's EOS ids and the chat template's eos_token.
    std::vector<int32_t> eos = m->lm->config().eos_ids;
    if (eos.empty() && m->tokenizer->eos_id()) eos.push_back(*m->tokenizer->eos_id());
    if (m->chat_template) {
      const auto& special = m->chat_template->special_tokens();
      if (auto it = special.find("eos_token"); it != special.end())
        if (auto tid = m->tokenizer->token_to_id(it->second); tid && std::find(eos.begin(), eos.end(), *tid) == eos.end())
          eos.push_back(*tid);
    }
    nlp::EngineOptions eo;
    eo.slots = options.slots;
    eo.context = options.context;
    eo.prefix_cache = options.prefix_cache;
    if (options.prefill_chunk > 0) eo.prefill_chunk = options.prefill_chunk;
    // NOTE [Speculative decoding]: the server's default for requests that do not choose.
    nlp::SpeculativeOptions spec;
    spec.type = nlp::parse_speculative_type(options.speculative);
    spec.draft_max = options.draft_max;
    nlp::validate_speculative(spec);
    if (!options.draft_model.empty()) {
      nlp::LoadOptions dlo;
      dlo.allow_unverified = options.allow_unverified;
      eo.draft = std::make_shared<const nlp::LoadedModel>(nlp::load_model(options.draft_model, dlo));
    } else if (spec.type == nlp::SpeculativeOptions::Type::kDraft) {
      throw Error(ErrorCode::kValue, "spore serve: --spec-type draft needs --spec-draft-model PATH");
    }
    auto w = std::make_unique<Worker>(*m, eo, options.queue, metrics);
    const nlp::MemoryReport mem = m->lm->weight_memory();
    std::fprintf(stderr,
                 "spore serve: model %s loaded in %.2f s; %lld slots x %lld tokens of context, KV cache %.1f MB, "
                 "weights %.1f MB\n",
                 id.c_str(), m->load_seconds, (long long)eo.slots, (long long)w->context(),
                 (double)w->gauges().kv_bytes / 1e6, (double)(mem.weights_mapped + mem.weights_resident) / 1e6);
    model = std::move(m);
    worker = std::move(w);
    model_id = id;
    chat_eos = eos;
    speculative = spec;
    draft_model = eo.draft;
    ready = true;
  } catch (const std::exception& e) {
    std::lock_guard<std::mutex> lock(load_mu);
    load_error = e.what();
  }
}

void Server::Impl::routes() {
  // DNS-rebinding defence, then authentication on every route but /health and the chat page
  // (NOTE [HTTP transport]).
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (auto refused = check_host_and_origin(req, *host_check)) {
      send_error(res, *refused);
      return HttpServer::HandlerResponse::Handled;
    }
    // The chat page itself holds no data (it asks for the key and sends it on every API call);
    // requiring the key for it would make the page unusable with --api-key, since a browser
    // cannot add a header to a navigation.
    const bool public_route = req.path == "/health" || (req.method == "GET" && req.path == "/");
    if (options.api_key.empty() || public_route) return HttpServer::HandlerResponse::Unhandled;
    if (bearer_key_matches(req.get_header_value("Authorization"), options.api_key))
      return HttpServer::HandlerResponse::Unhandled;
    send_error(res, ApiError(401, "Missing or wrong API key; send the header 'Authorization: Bearer <key>'",
                             "authentication_error", "", "invalid_api_key"));
    return HttpServer::HandlerResponse::Handled;
  });
  // Error statuses without a body (no route) get an error object too; the transport's own
  // refusals (400, 408, 413, 431, ...) carry theirs already.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.status == 404)
      send_error(res, ApiError(404, "No route " + req.method + " " + req.path + "; see GET /v1/models, POST "
                                    "/v1/chat/completions, POST /v1/completions",
                               "invalid_request_error", "", "unknown_route"));
    else
      send_error(res, ApiError(res.status, "HTTP error " + std::to_string(res.status),
                               res.status >= 500 ? "server_error" : "invalid_request_error"));
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    metrics.request(route_label(req.path), res.status);
  });

  http.Get("/health", guarded([this](const httplib::Request&, httplib::Response& res) {
    require_ready();
    send_json(res, {{"status", "ok"}});
  }));
  http.Get("/v1/models", guarded([this](const httplib::Request&, httplib::Response& res) {
    require_ready();
    json m = {{"id", model_id}, {"object", "model"}, {"created", created}, {"owned_by", "spore"}};
    if (!model) {
      m["meta"] = {{"n_ctx", embedder->context()}, {"n_vocab", embedder->tokenizer().vocab_size()},
                   {"family", embedder->family()},  {"format", embedder->format()},
                   {"n_embd", embedder->dimensions()}, {"pooling", nlp::pooling_name(embedder->pooling())}};
      send_json(res, {{"object", "list"}, {"data", json::array({m})}});
      return;
    }
    m["meta"] = {{"n_ctx", worker->context()},
                 {"n_vocab", model->lm->config().vocab_size},
                 {"family", model->lm->config().family},
                 {"format", model->format},
                 {"slots", options.slots}};
    send_json(res, {{"object", "list"}, {"data", json::array({m})}});
  }));
  http.Post("/v1/chat/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, true);
  }));
  http.Post("/v1/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, false);
  }));
  http.Post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const json body = parse_json_object(req.body, options.max_body_bytes);
    auto c = body.find("content");
    if (c == body.end() || !c->is_string()) throw bad_field("content", "missing or not a string", "invalid_type");
    bool add_special = false, with_pieces = false;
    if (auto a = body.find("add_special"); a != body.end()) {
      if (!a->is_boolean()) throw bad_field("add_special", "expected a boolean", "invalid_type");
      add_special = *a;
    }
    if (auto a = body.find("with_pieces"); a != body.end()) {
      if (!a->is_boolean()) throw bad_field("with_pieces", "expected a boolean", "invalid_type");
      with_pieces = *a;
    }
    const std::vector<int32_t> ids = tokenizer().encode(c->get<std::string>(), add_special);
    json tokens = json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        const int32_t one[1] = {id};
        tokens.push_back({{"id", id}, {"piece", tokenizer().decode(one)}});
      } else {
        tokens.push_back(id);
      }
    }
    send_json(res, {{"tokens", tokens}});
  }));
  http.Post("/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const json body = parse_json_object(req.body, options.max_body_bytes);
    auto t = body.find("tokens");
    if (t == body.end() || !t->is_array()) throw bad_field("tokens", "missing or not a list of token ids", "invalid_type");
    std::vector<int32_t> ids;
    const int32_t vocab = tokenizer().vocab_size();
    for (const json& x : *t) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= vocab)
        throw bad_field("tokens", x.dump() + " is not a token id; ids are integers in [0, " + std::to_string(vocab) + ")");
      ids.push_back((int32_t)x.get<int64_t>());
    }
    send_json(res, {{"content", tokenizer().decode(ids)}});
  }));
  http.Post("/apply-template", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    require_generator();
    RequestLimits lim{model_id, options.max_messages, worker->context(), options.max_body_bytes};
    json body = parse_json_object(req.body, options.max_body_bytes);
    body.erase("model");
    body.erase("stream");
    body.erase("stream_options");
    const CompletionRequest r = parse_completion_request(dump(body), /*chat=*/true, lim);
    send_json(res, {{"prompt", render_chat(r.messages, r.tools)}});
  }));
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Gauges g;
    if (ready && worker) g = worker->gauges();
    res.set_content(metrics.render(g), "text/plain; version=0.0.4");
  });
  embedding_routes([](Handler fn) { return guarded(std::move(fn)); });  // NOTE [Embeddings]
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(chat_page_html(), "text/html; charset=utf-8");
  });
}

Server::Server(ServeOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.slots < 1) throw Error(ErrorCode::kValue, "spore serve: --slots must be at least 1");
  if (impl_->options.queue < 0) throw Error(ErrorCode::kValue, "spore serve: --queue must be 0 or more");
  if (impl_->options.context < 0) throw Error(ErrorCode::kValue, "spore serve: --ctx must be 0 or more");
  impl_->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  Impl& m = *impl_;
  // Workers: every slot and queued request may hold one (a stream), plus some for the small
  // routes. Slow or idle clients hold none (NOTE [HTTP transport]).
  HttpOptions ho;
  ho.threads = (size_t)(m.options.slots + m.options.queue + 8);
  ho.limits.max_body_bytes = m.options.max_body_bytes;
  ho.max_connections = m.options.max_connections;
  m.http.set_options(ho);
  m.routes();
}

Server::~Server() { stop(); }

int Server::bind() {
  Impl& m = *impl_;
  if (m.port >= 0) return m.port;
  m.port = m.http.bind(m.options.host, m.options.port);
  if (m.port < 0)
    throw Error(ErrorCode::kIO, "spore serve: cannot listen on " + m.options.host + ":" + std::to_string(m.options.port) +
                                    " (in use, or not an address of this machine); pick another --port or --host");
  m.host_check = std::make_unique<http::HostCheck>(m.options.host, m.port, m.options.allowed_hosts);
  return m.port;
}

void Server::run() {
  Impl& m = *impl_;
  bind();
  std::thread loader([&m] {
    m.load();
    if (m.ready) return;
    // A server without its model is no use: stop (once listening), and say why below.
    for (int i = 0; i < 5000 && !m.http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    m.http.stop();
  });
  m.http.listen_after_bind();
  loader.join();
  m.worker.reset();
  std::lock_guard<std::mutex> lock(m.load_mu);
  if (!m.load_error.empty()) throw Error(ErrorCode::kIO, "spore serve: the model failed to load: " + m.load_error);
}

void Server::stop() {
  if (impl_) impl_->http.stop();
}

}  // namespace spore::serve
