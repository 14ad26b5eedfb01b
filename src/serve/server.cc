// Set-up of the HTTP server, authentication, error answers, metrics, and the small routes
// (/health, /v1/models, /tokenize, /detokenize, /apply-template, /metrics, / and the chat page).
#include <openssl/crypto.h>
#include <strings.h>

#include <chrono>
#include <cstdio>
#include <optional>

#include "serve/model_listing.h"
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

void Server::Impl::require_generator(const Lease& m) const {
  if (!m->model)
    throw ApiError(400, m.name() + " is an embedding model (" + m->embedder->family() + "); it serves POST /v1/embeddings" +
                            (m->embedder->can_rerank() ? " and POST /v1/rerank" : "") + ", not text generation",
                   "invalid_request_error", "model", "model_not_generative");
}

const nlp::Tokenizer& Server::Impl::tokenizer(const Lease& m) const {
  return m->model ? *m->model->tokenizer : m->embedder->tokenizer();
}

std::string Server::Impl::render_chat(const Lease& m, const json& messages, const json& tools) const {
  if (!m->model->chat_template)
    throw ApiError(400, m->model->path.filename().string() + " carries no chat template; use /v1/completions",
                   "invalid_request_error", "messages", "no_chat_template");
  json kwargs = json::object();
  if (!tools.is_null()) kwargs["tools"] = tools;
  return m->model->chat_template->render(dump(messages), /*add_generation_prompt=*/true, dump(kwargs));
}

Server::Impl::Lease Server::Impl::lease_for(const json& body) {
  std::string name;
  if (auto it = body.find("model"); it != body.end() && !it->is_null()) {
    if (!it->is_string()) throw bad_field("model", "expected a string, the id of a model GET /v1/models lists", "invalid_type");
    name = it->get<std::string>();
  }
  if (name.empty()) {
    // One model: requests need not name it (as before). Several: they must.
    if (registry->catalogue().size() == 1) return {registry->acquire(registry->catalogue()[0].name)};
    throw bad_field("model", "missing; this server serves " + std::to_string(registry->catalogue().size()) +
                                 " models, so a request names one (GET /v1/models lists them)",
                    "missing_field");
  }
  return {registry->acquire(name)};
}

// NOTE [Many models]: the registry's loader. A decoder gets its own worker (queue, engine and
// thread), so a long prefill on one model never holds up another's steps.
std::unique_ptr<ModelInstance> Server::Impl::load_instance(const ModelSource& source) {
  const std::filesystem::path& path = source.path;
  auto inst = std::make_unique<ModelInstance>();
  if (nlp::is_encoder_model(path)) {  // NOTE [Embeddings]: no engine, no worker
    if (!options.lora.empty())
      throw Error(ErrorCode::kUnsupported, "--lora: " + path.string() + " is an embedding (encoder) model; LoRA "
                                           "adapters apply to the decoder models that generate");
    nlp::EmbeddingLoadOptions eo;
    eo.allow_unverified = options.allow_unverified;
    inst->embedder = std::make_unique<nlp::EmbeddingModel>(nlp::load_embedding_model(path, eo));
    const nlp::EmbeddingModel& e = *inst->embedder;
    inst->bytes = e.memory().total();
    std::fprintf(stderr, "spore serve: embedding model %s (%s, %s pooling, %lld dimensions, %.1f MB) loaded\n",
                 source.name.c_str(), e.family().c_str(), nlp::pooling_name(e.pooling()).c_str(),
                 (long long)e.dimensions(), (double)inst->bytes / 1e6);
    return inst;
  }
  nlp::LoadOptions lo;
  lo.allow_unverified = options.allow_unverified;
  lo.require_tokenizer = true;
  auto m = std::make_unique<nlp::LoadedModel>(nlp::load_model(path, lo));
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
  // One --ctx for every model: a model made for less gets its own maximum (NOTE [Many models]).
  if (const int64_t most = m->lm->config().max_position_embeddings; most > 0 && eo.context > most) eo.context = most;
  eo.prefix_cache = options.prefix_cache;
  if (options.prefill_chunk > 0) eo.prefill_chunk = options.prefill_chunk;
  eo.draft = draft_model;
  lora.load(options.lora, !options.lora_init_without_apply, *m);  // NOTE [LoRA adapters]: one model only
  auto w = std::make_unique<Worker>(*m, eo, options.queue, metrics);
  const nlp::MemoryReport mem = w->memory();
  inst->bytes = mem.total();
  std::fprintf(stderr,
               "spore serve: model %s loaded in %.2f s; %lld slots x %lld tokens of context, KV cache %.1f MB, "
               "weights %.1f MB (mapped %s, resident %s), %.1f MB in all\n",
               source.name.c_str(), m->load_seconds, (long long)eo.slots, (long long)w->context(),
               (double)w->gauges().kv_bytes / 1e6, (double)(mem.weights_mapped + mem.weights_resident) / 1e6,
               nlp::format_bytes(mem.weights_mapped).c_str(), nlp::format_bytes(mem.weights_resident).c_str(),
               (double)inst->bytes / 1e6);
  inst->model = std::move(m);
  inst->worker = std::move(w);
  inst->chat_eos = std::move(eos);
  return inst;
}

void Server::Impl::load() {
  try {
    set_num_threads(options.threads);
    // NOTE [Speculative decoding]: the server's default for requests that do not choose.
    nlp::SpeculativeOptions spec;
    spec.type = nlp::parse_speculative_type(options.speculative);
    spec.draft_max = options.draft_max;
    nlp::validate_speculative(spec);
    if (!options.draft_model.empty()) {
      nlp::LoadOptions dlo;
      dlo.allow_unverified = options.allow_unverified;
      draft_model = std::make_shared<const nlp::LoadedModel>(nlp::load_model(options.draft_model, dlo));
    } else if (spec.type == nlp::SpeculativeOptions::Type::kDraft) {
      throw Error(ErrorCode::kValue, "spore serve: --spec-type draft needs --spec-draft-model PATH");
    }
    speculative = spec;
    // One model is loaded now (a server for it is no use without it); several load on first use.
    if (load_at_start) registry->acquire(registry->catalogue()[0].name);
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
    send_json(res, model_list(*registry, created, options.slots));  // NOTE [Many models]
  }));
  http.Post("/v1/chat/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, true);
  }));
  http.Post("/v1/completions", guarded([this](const httplib::Request& req, httplib::Response& res) {
    completion(req, res, false);
  }));
  // llama-server's adapter routes (NOTE [LoRA adapters]).
  http.Get("/lora-adapters", guarded([this](const httplib::Request&, httplib::Response& res) {
    require_ready();
    send_json(res, lora.list());
  }));
  http.Post("/lora-adapters", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    lora.set_scales(req.body);
    send_json(res, {{"success", true}});
  }));
  http.Post("/tokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const json body = parse_json_object(req.body, options.max_body_bytes);
    const Lease m = lease_for(body);
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
    const std::vector<int32_t> ids = tokenizer(m).encode(c->get<std::string>(), add_special);
    json tokens = json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        const int32_t one[1] = {id};
        tokens.push_back({{"id", id}, {"piece", tokenizer(m).decode(one)}});
      } else {
        tokens.push_back(id);
      }
    }
    send_json(res, {{"tokens", tokens}});
  }));
  http.Post("/detokenize", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const json body = parse_json_object(req.body, options.max_body_bytes);
    const Lease m = lease_for(body);
    auto t = body.find("tokens");
    if (t == body.end() || !t->is_array()) throw bad_field("tokens", "missing or not a list of token ids", "invalid_type");
    std::vector<int32_t> ids;
    const int32_t vocab = tokenizer(m).vocab_size();
    for (const json& x : *t) {
      if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= vocab)
        throw bad_field("tokens", x.dump() + " is not a token id; ids are integers in [0, " + std::to_string(vocab) + ")");
      ids.push_back((int32_t)x.get<int64_t>());
    }
    send_json(res, {{"content", tokenizer(m).decode(ids)}});
  }));
  http.Post("/apply-template", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    json body = parse_json_object(req.body, options.max_body_bytes);
    const Lease m = lease_for(body);
    require_generator(m);
    RequestLimits lim{m.name(), options.max_messages, m->worker->context(), options.max_body_bytes};
    body.erase("model");
    body.erase("stream");
    body.erase("stream_options");
    const CompletionRequest r = parse_completion_request(dump(body), /*chat=*/true, lim);
    send_json(res, {{"prompt", render_chat(m, r.messages, r.tools)}});
  }));
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    Gauges g = loaded_gauges(*registry);  // summed over the loaded models
    g.ready = ready;
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
  // NOTE [Many models]: the catalogue is fixed here (kValue / kIO for a bad --models folder or
  // two models of one name); one model is loaded before serving, several on first use.
  std::vector<std::string> paths;
  if (!m.options.model.empty()) paths.push_back(m.options.model);
  paths.insert(paths.end(), m.options.more_models.begin(), m.options.more_models.end());
  if (paths.empty() && m.options.model_dirs.empty()) paths.push_back(nlp::default_model_path().string());
  m.load_at_start = paths.size() == 1 && m.options.model_dirs.empty();
  // An adapter belongs to the base it was trained on; with several models it would be unclear
  // which one that is, so --lora serves a single --model (NOTE [LoRA adapters]).
  if (!m.options.lora.empty() && !m.load_at_start)
    throw Error(ErrorCode::kValue, "spore serve: --lora applies to one model; serve its base alone with --model PATH "
                                   "(several models: no adapters)");
  ModelRegistry::Options ro;
  ro.max_memory = m.options.max_memory;
  m.registry = std::make_unique<ModelRegistry>(model_catalog(paths, m.options.model_dirs), ro,
                                               [&m](const ModelSource& s) { return m.load_instance(s); });
  // Workers: every slot and queued request may hold one (a stream), plus some for the small
  // routes; with several models, as many per model for up to 8 models at once. Slow or idle
  // clients hold none (NOTE [HTTP transport]).
  const size_t busy_models = std::min<size_t>(m.registry->catalogue().size(), 8);
  HttpOptions ho;
  ho.threads = (size_t)(m.options.slots + m.options.queue) * busy_models + 8;
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
  m.registry->unload_all();  // the workers stop here
  std::lock_guard<std::mutex> lock(m.load_mu);
  if (!m.load_error.empty()) throw Error(ErrorCode::kIO, "spore serve: the model failed to load: " + m.load_error);
}

void Server::stop() {
  if (impl_) impl_->http.stop();
}

}  // namespace spore::serve
