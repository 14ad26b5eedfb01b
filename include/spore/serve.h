// spore serve (NOTE [Server] in docs/design.md): an OpenAI-compatible HTTP server over one causal
// LM. One worker thread owns the model and the engine; HTTP threads parse requests, queue them
// (bounded) and stream the worker's events back as JSON or server-sent events.
//
//   spore::serve::ServeOptions o;
//   o.port = 0;                       // any free port
//   spore::serve::Server s(o);
//   int port = s.bind();              // listening now; /health answers 503 until the model loads
//   s.run();                          // loads the model, serves until stop()
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace spore::serve {

struct ServeOptions {
  std::string model;                // directory or .gguf; empty: nlp::default_model_path()
  // More models (NOTE [Many models]): each --model after the first, and every model in each
  // --models folder, served by name ("model" in requests); loaded on first use, unloaded least
  // recently used when max_memory (bytes, 0: no limit) would be exceeded.
  std::vector<std::string> more_models;
  std::vector<std::string> model_dirs;
  uint64_t max_memory = 0;
  std::string host = "127.0.0.1";   // loopback unless asked otherwise
  int port = 8080;                  // 0: any free port (bind() says which)
  int64_t slots = 4;                // sequences decoded together
  int64_t context = 2048;           // tokens per slot (KV memory is slots x context)
  int64_t queue = 16;               // requests waiting for a slot before 503
  std::string api_key;              // non-empty: Authorization: Bearer required (not on /health)
  std::size_t max_body_bytes = std::size_t{1} << 20;  // larger bodies (received or inflated): 413
  // Host names (or IP literals) served besides localhost, 127.0.0.1, [::1] and `host`; other Host
  // or browser Origin values get 403 (DNS-rebinding defence). "*": any.
  std::vector<std::string> allowed_hosts;
  std::size_t max_connections = 1024;  // open connections; one more gets 503
  int64_t max_messages = 512;       // longer message lists: 400
  bool allow_unverified = false;    // load a model whose lock does not match
  int threads = 0;                  // kernel threads (0: one per core)
  bool prefix_cache = true;         // reuse a free slot's KV rows for a shared prompt prefix
  int64_t prefill_chunk = 0;        // prompt tokens per sequence per step (0: the engine's default)
  // Speculative decoding for requests that do not choose (NOTE [Speculative decoding]): "none",
  // "ngram" or "draft" (needs draft_model), with up to draft_max tokens drafted per step. A request
  // chooses with "speculative": "ngram" or {"type": "ngram", "n_max": 8}.
  std::string speculative = "none";
  int64_t draft_max = 8;
  std::string draft_model;          // a smaller model of the same vocabulary; empty: none
  // LoRA adapters (NOTE [LoRA adapters]): PATH or PATH:SCALE each, ids 0, 1, ... in this order;
  // requests pick with "lora": [{"id", "scale"}]. Without apply their global scales start at 0.
  std::vector<std::string> lora;
  bool lora_init_without_apply = false;
};

class Server {
 public:
  explicit Server(ServeOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Binds the listening socket; returns the port. kIO naming host:port when it cannot.
  int bind();
  // Loads the model (the server answers /health with 503 meanwhile) and serves until stop().
  // Binds first when bind() was not called.
  void run();
  void stop();  // from any thread (a signal handler's helper thread)

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace spore::serve
