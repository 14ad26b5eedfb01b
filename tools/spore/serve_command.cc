// spore serve: the OpenAI-compatible HTTP server (include/spore/serve.h, NOTE [Server]).
//   spore serve [--model PATH]... [--models DIR]... [--max-memory BYTES] [--host 127.0.0.1]
//               [--port 8080] [--slots N] [--ctx N] [--queue N] [--api-key KEY] [--max-body BYTES] [--allowed-hosts A,B] [--max-connections N]
//               [--threads N] [--allow-unverified]
// Prints the address at once (/health answers 503 while the model loads), then the model's
// figures; SIGINT or SIGTERM stops it.
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <exception>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "spore/llm.h"
#include "spore/serve.h"

namespace spore::cli {

namespace {

int run_serve(const serve::ServeOptions& o) {
  // The signals go to one waiting thread (blocked here before any other thread starts).
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  serve::Server server(o);
  const int port = server.bind();
  std::fprintf(stderr, "spore serve: listening on http://%s:%d (OpenAI API under /v1, chat page at /)%s\n",
               o.host.c_str(), port, o.api_key.empty() ? "" : "; API key required");
  std::thread waiter([&server, set] {
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGUSR1) return;  // the server stopped on its own
    std::fprintf(stderr, "spore serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    server.stop();
  });
  std::exception_ptr failure;
  try {
    server.run();
  } catch (...) {
    failure = std::current_exception();  // rethrown once the waiter is gone (main prints it)
  }
  // Wake the waiter if no signal came (run() ended for another reason).
  pthread_kill(waiter.native_handle(), SIGUSR1);
  waiter.join();
  if (failure) std::rethrow_exception(failure);
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, Handlers& h) {
  auto* cmd = add_command(app, "serve", "Serve a language model over the OpenAI API (HTTP, JSON and SSE)",
                          "spore serve --port 8080 --slots 4");
  auto o = std::make_shared<serve::ServeOptions>();
  // NOTE [Many models]: --model may be repeated and --models adds a folder's models.
  auto paths = std::make_shared<std::vector<std::string>>();
  cmd->add_option("--model", *paths,
                  "Model directory or .gguf file (default: the embedded SmolLM2-135M-Instruct); repeat it to serve "
                  "several. A model is served under its file's stem; a directory under its name, or the stem of the "
                  "one .gguf inside when it has no config.json; requests name it in \"model\"");
  cmd->add_option("--models", o->model_dirs,
                  "Serve every model in this folder by name: each NAME.gguf file as NAME, each subdirectory NAME holding "
                  "a config.json or a .gguf as NAME. Models load on their first request; two of one name are refused "
                  "at start-up. Repeatable");
  cmd->add_option("--max-memory", o->max_memory,
                  "Bytes all loaded models may take together (weights + KV cache + scratch, from the engine's memory "
                  "report); the least recently used idle model is unloaded to make room, a model larger than this "
                  "alone is answered 507 (0: no limit)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--host", o->host, "Address to listen on (0.0.0.0 exposes the server to the network)")->capture_default_str();
  cmd->add_option("--port", o->port, "Port (0: any free port)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--slots", o->slots, "Requests generated together (continuous batching)")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--ctx", o->context, "Tokens of context per slot (KV memory is slots x ctx; 0: the model's, at most 4096; a model made for "
                  "fewer gets its own maximum)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--queue", o->queue, "Requests that may wait for a slot; more get 503 with Retry-After")
      ->check(CLI::Range(0, 4096))->capture_default_str();
  cmd->add_option("--api-key", o->api_key, "Require 'Authorization: Bearer KEY' on every route but /health");
  cmd->add_option("--max-body", o->max_body_bytes, "Largest request body in bytes, as received and once inflated (larger: 413)")
      ->check(CLI::PositiveNumber)->capture_default_str();
  cmd->add_option("--allowed-hosts", o->allowed_hosts,
                  "Host names served besides localhost, 127.0.0.1, [::1] and --host (comma-separated; '*': any). "
                  "Requests whose Host or Origin names another get 403 (a DNS-rebinding defence)")
      ->delimiter(',');
  cmd->add_option("--max-connections", o->max_connections, "Open connections at most; one more is answered 503")
      ->check(CLI::Range(1, 1000000))->capture_default_str();
  cmd->add_option("--threads", o->threads, "Threads for the kernels (0: one per core)")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--no-prefix-cache{false}", o->prefix_cache,
               "Recompute every prompt instead of reusing KV rows a finished request left with the same prefix");
  cmd->add_option("--prefill-chunk", o->prefill_chunk, "Prompt tokens per request per step (0: the engine's default)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  cmd->add_option("--spec-type,--speculative", o->speculative,
                  "Speculative decoding for requests that do not choose: none, ngram or draft")
      ->capture_default_str();
  cmd->add_option("--spec-draft-n-max,--draft-max", o->draft_max, "Tokens drafted per step at most (1 to 64)")
      ->capture_default_str();
  cmd->add_option("--spec-draft-model,--model-draft,--draft", o->draft_model,
                  "A smaller model of the same vocabulary, for requests asking \"speculative\": \"draft\"");
  cmd->add_option("--lora", o->lora,
                  "A LoRA adapter, PATH or PATH:SCALE (llama.cpp GGUF or PEFT directory); repeat for several (ids 0, "
                  "1, ...; requests choose with \"lora\": [{\"id\", \"scale\"}])");
  cmd->add_flag("--lora-init-without-apply", o->lora_init_without_apply,
                "Load the --lora adapters with scale 0 (requests or POST /lora-adapters turn them on)");
  cmd->add_flag("--allow-unverified", o->allow_unverified, "Load even when the files do not match the artifact's lock");
  auto no_repack = std::make_shared<bool>(false);
  cmd->add_flag("--no-repack", *no_repack, kNoRepackHelp);
  cmd->callback([&h, o, paths, no_repack] {
    set_repack_at_load(!*no_repack);  // a process default: every model this server loads, now or later
    if (!paths->empty()) {
      o->model = paths->front();
      o->more_models.assign(paths->begin() + 1, paths->end());
    }
    h.action = [o] { return run_serve(*o); };
  });
}

}  // namespace spore::cli
