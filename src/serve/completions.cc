// POST /v1/chat/completions and /v1/completions: parse, render the prompt, queue a job on the
// worker, and answer with one JSON object or stream server-sent events as tokens arrive:
//   data: {chunk}\n\n ... data: {last chunk, finish_reason}\n\n [data: {usage}\n\n] data: [DONE]\n\n
// A stream whose client is gone (a write fails) cancels its job, which frees the slot.
#include <chrono>

#include "serve/peer_socket.h"
#include "serve/request.h"
#include "serve/server_impl.h"
#include "serve/tool_calls.h"
#include "spore/error.h"

namespace spore::serve {

using nlohmann::json;

namespace {

std::string finish_name(nlp::FinishReason f) {
  switch (f) {
    case nlp::FinishReason::kLength: return "length";
    case nlp::FinishReason::kError: return "error";
    case nlp::FinishReason::kGrammarDeadEnd: return "grammar_dead_end";  // NOTE [Grammars]
    default: return "stop";
  }
}

json token_bytes(const std::string& s) {
  json b = json::array();
  for (unsigned char c : s) b.push_back((int)c);
  return b;
}

// Per-request state shared by the JSON and SSE paths.
struct Reply {
  bool chat = false;
  std::string id, model;
  int64_t created = 0;
  const nlp::Tokenizer* tokenizer = nullptr;
  // The model, held until the answer's last byte (NOTE [Many models]): never unloaded meanwhile.
  std::shared_ptr<ModelRegistry::Lease> lease;
  bool logprobs = false;
  bool tools = false;  // the request offered tools: the answer is parsed for tool calls at the end
  std::shared_ptr<Job> job;

  std::string text;
  int64_t completion_tokens = 0;  // without the final EOS
  json chat_logprobs = json::array();
  json cmpl_logprobs = {{"tokens", json::array()}, {"token_logprobs", json::array()},
                        {"top_logprobs", json::array()}, {"text_offset", json::array()}};
  nlp::FinishReason finish = nlp::FinishReason::kNone;
  std::string error;

  std::string piece(int32_t id) const {
    const int32_t one[1] = {id};
    return tokenizer->decode(one);
  }

  // Folds one event in; returns its logprobs entry for a stream chunk (null when none).
  json add(const nlp::SequenceEvent& ev, const std::string& offset_text) {
    json lp = nullptr;
    if (ev.token && !ev.eos) {
      ++completion_tokens;
      if (logprobs) {
        const std::string tok = piece(*ev.token);
        if (chat) {
          json top = json::array();
          for (const nlp::TokenLogprob& t : ev.top_logprobs) {
            const std::string p = piece(t.id);
            top.push_back({{"token", p}, {"logprob", t.logprob}, {"bytes", token_bytes(p)}});
          }
          lp = {{"token", tok}, {"logprob", ev.logprob}, {"bytes", token_bytes(tok)}, {"top_logprobs", top}};
          chat_logprobs.push_back(lp);
        } else {
          json top = json::object();
          for (const nlp::TokenLogprob& t : ev.top_logprobs) top[piece(t.id)] = t.logprob;
          cmpl_logprobs["tokens"].push_back(tok);
          cmpl_logprobs["token_logprobs"].push_back(ev.logprob);
          cmpl_logprobs["top_logprobs"].push_back(top);
          cmpl_logprobs["text_offset"].push_back(offset_text.size());
          lp = {{"tokens", {tok}}, {"token_logprobs", {ev.logprob}}, {"top_logprobs", {top}},
                {"text_offset", {offset_text.size()}}};
        }
      }
    }
    text += ev.text;
    if (ev.finished != nlp::FinishReason::kNone) {
      finish = ev.finished;
      if (ev.finished == nlp::FinishReason::kError) error = ev.error;
    }
    return lp;
  }

  // OpenAI's shape; cached_tokens: the prompt's leading tokens served from the prefix cache.
  json usage() const {
    return {{"prompt_tokens", (int64_t)job->prompt.size()},
            {"completion_tokens", completion_tokens},
            {"total_tokens", (int64_t)job->prompt.size() + completion_tokens},
            {"prompt_tokens_details", {{"cached_tokens", job->timings.cached_prompt_tokens}}}};
  }

  // llama.cpp's server field names: prompt_n counts the prompt tokens computed, cache_n those
  // reused from the prefix cache.
  json timings() const {
    const nlp::Timings& t = job->timings;
    const double decode_ms = t.total_ms - t.first_token_ms;
    const int64_t decoded = std::max<int64_t>(t.generated_tokens - 1, 0);
    const int64_t computed = t.prompt_tokens - t.cached_prompt_tokens;
    // draft_n / draft_n_accepted: llama.cpp's server names for speculative decoding's counts.
    return {{"cache_n", t.cached_prompt_tokens},
            {"draft_n", t.drafted_tokens},
            {"draft_n_accepted", t.accepted_tokens},
            {"prompt_n", computed},
            {"prompt_ms", t.prompt_ms},
            {"prompt_per_token_ms", computed ? t.prompt_ms / (double)computed : 0.0},
            {"prompt_per_second", t.prompt_tokens_per_second()},
            {"predicted_n", t.generated_tokens},
            {"predicted_ms", decode_ms},
            {"predicted_per_token_ms", decoded ? decode_ms / (double)decoded : 0.0},
            {"predicted_per_second", t.tokens_per_second()},
            {"first_token_ms", t.first_token_ms}};
  }

  json chunk(json delta_or_text, json lp, json finish_reason) const {
    json c = {{"index", 0}, {"logprobs", lp}, {"finish_reason", finish_reason}};
    if (chat) c["delta"] = std::move(delta_or_text);
    else c["text"] = std::move(delta_or_text);
    return {{"id", id}, {"object", chat ? "chat.completion.chunk" : "text_completion"}, {"created", created},
            {"model", model}, {"choices", json::array({c})}};
  }

  json full() const {
    json c = {{"index", 0}, {"finish_reason", finish_name(finish)}};
    if (chat) {
      c["message"] = {{"role", "assistant"}, {"content", text}};
      if (tools && finish != nlp::FinishReason::kError) {
        const ParsedAnswer a = parse_tool_calls(text);
        if (!a.calls.empty()) {
          c["message"]["content"] = a.content.empty() ? json(nullptr) : json(a.content);
          c["message"]["tool_calls"] = tool_calls_json(a.calls, id);
          c["finish_reason"] = "tool_calls";
        }
      }
      c["logprobs"] = logprobs ? json{{"content", chat_logprobs}} : json(nullptr);
    } else {
      c["text"] = text;
      c["logprobs"] = logprobs ? cmpl_logprobs : json(nullptr);
    }
    return {{"id", id},          {"object", chat ? "chat.completion" : "text_completion"},
            {"created", created}, {"model", model},
            {"choices", json::array({c})}, {"usage", usage()},
            {"timings", timings()}, {"system_fingerprint", "spore"}};
  }
};

std::string sse(const json& j) { return "data: " + dump(j) + "\n\n"; }

}  // namespace

void Server::Impl::completion(const httplib::Request& req, httplib::Response& res, bool chat) {
  require_ready();
  const Lease m = lease_for(parse_json_object(req.body, options.max_body_bytes));
  require_generator(m);
  Worker* worker = m->worker.get();
  RequestLimits limits{m.name(), options.max_messages, worker->context(), options.max_body_bytes};
  limits.speculative = speculative;
  limits.draft_model = draft_model != nullptr;
  limits.lora_adapters = lora.size();
  const CompletionRequest r = parse_completion_request(req.body, chat, limits);
  nlp::GenerateOptions o = r.generate;
  o.lora = lora.for_request(r.lora);
  std::vector<int32_t> ids;
  std::string prompt_text;
  if (chat) {
    const std::string prompt = render_chat(m, r.messages, r.tools);
    // A template that does not show the tools to the model (SmolLM2's, for one) would drop them
    // without a word and the model could never call them: refuse, as vLLM refuses tools it cannot
    // honour. Rendered tools that overflow the context are refused below like any long prompt.
    // A forced call (tool_choice "required" or a named function) is constrained to the tools'
    // schemas by a grammar (NOTE [Grammars]), so it is served even then.
    if (!r.forced_tools && r.tools.is_array() && !r.tools.empty() && render_chat(m, r.messages, nullptr) == prompt)
      throw ApiError(400, "This model's chat template does not show tools to the model, so it could not call them; "
                          "send the request without \"tools\" (or with \"tool_choice\": \"none\"), or serve a model "
                          "whose template renders tools (Qwen2.5, Qwen3, Llama 3.1 and later)",
                     "invalid_request_error", "tools", "tools_not_supported");
    ids = m->model->tokenizer->encode(prompt, /*add_special_tokens=*/false);
    o.eos_ids = m->chat_eos;
  } else {
    ids = m->model->tokenizer->encode(r.prompt);
    prompt_text = r.prompt;
  }
  const int64_t room = worker->context() - (int64_t)ids.size();
  if (ids.empty()) throw bad_field(chat ? "messages" : "prompt", "the prompt encodes to no tokens; send some text");
  if (room < 1)
    throw ApiError(400, "The prompt takes " + std::to_string(ids.size()) + " tokens; the context is " +
                            std::to_string(worker->context()) + " tokens per request (--ctx). Shorten the " +
                            (chat ? "conversation" : "prompt"),
                   "invalid_request_error", chat ? "messages" : "prompt", "context_length_exceeded");
  o.max_tokens = std::min<int64_t>(r.max_tokens.value_or(room), room);

  auto reply = std::make_shared<Reply>();
  reply->chat = chat;
  reply->id = (chat ? "chatcmpl-" : "cmpl-") + std::to_string(next_id++);
  reply->model = m.name();
  reply->created = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  reply->tokenizer = &*m->model->tokenizer;
  reply->lease = m.held;
  reply->logprobs = r.logprobs;
  reply->tools = chat && r.tools.is_array() && !r.tools.empty();
  reply->job = std::make_shared<Job>(std::move(ids), o);
  if (r.echo) reply->text = prompt_text;
  // The connection's socket, found here in the thread that serves the request: watched while the
  // answer waits (nothing is written, so no write can fail) and by the worker at admission.
  const int peer_fd = PeerSocket::find(req);
  reply->job->watch_peer(peer_fd);
  if (!worker->submit(reply->job)) {
    metrics.rejected_queue_full();
    res.set_header("Retry-After", "1");
    throw ApiError(503, "The server is busy: every slot (" + std::to_string(options.slots) + ") and queue place (" +
                            std::to_string(options.queue) + ") is taken; retry after 1 s",
                   "server_error", "", "queue_full");
  }

  const std::string route = chat ? "/v1/chat/completions" : "/v1/completions";
  if (!r.stream) {
    // Nothing is written until the end, so httplib would never see the client leave: the peer
    // socket is watched between waits (queued or generating) and a departed client's job is
    // cancelled, which frees its slot at once.
    struct Release {  // the socket is not asked about once this handler returns
      Job& job;
      ~Release() { job.release_peer(); }
    } release{*reply->job};
    std::vector<nlp::SequenceEvent> events;
    bool done = false;
    while (!done) {
      events.clear();
      done = reply->job->take(events, 100);
      for (const auto& ev : events) reply->add(ev, reply->text);
      // Gone: seen here while waiting, or by the worker when the job left the queue (cancelled).
      const bool gone = done ? reply->finish == nlp::FinishReason::kCancelled : peer_fd >= 0 && PeerSocket::closed(peer_fd);
      if (gone) {
        if (!done) worker->cancel(reply->job);
        metrics.client_disconnected(route);
        send_error(res, ApiError(499, "The client closed the connection before the answer was complete",
                                 "invalid_request_error", "", "client_disconnected"));
        return;  // httplib's write of this answer fails quietly; the logger counts the 499
      }
    }
    if (reply->finish == nlp::FinishReason::kError)
      throw ApiError(500, "Generation failed: " + reply->error, "server_error", "", "generation_failed");
    send_json(res, reply->full());
    return;
  }

  Worker* worker_ptr = worker;
  Metrics* metrics_ptr = &metrics;
  const bool include_usage = r.include_usage;
  auto sent_head = std::make_shared<bool>(false);
  // While a stream waits in the queue (or in a long prefill) nothing is written, so a write
  // cannot fail: its socket is watched too.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream",
      [reply, worker_ptr, metrics_ptr, route, peer_fd, include_usage, sent_head](size_t, httplib::DataSink& sink) {
        std::string out;
        if (!*sent_head) {
          *sent_head = true;
          if (reply->chat) out += sse(reply->chunk({{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
          else if (!reply->text.empty()) out += sse(reply->chunk(reply->text, nullptr, nullptr));  // echo
        }
        std::vector<nlp::SequenceEvent> events;
        const bool done = reply->job->take(events, 100);
        for (const auto& ev : events) {
          const std::string before = reply->text;
          json lp = reply->add(ev, before);
          // With tools the text is held back: it may be a tool call, sent as such at the end.
          if ((!ev.text.empty() && !reply->tools) || !lp.is_null()) {
            json delta = reply->chat ? json{{"content", reply->tools ? "" : ev.text}} : json(ev.text);
            if (reply->chat && !lp.is_null()) lp = {{"content", json::array({lp})}};
            out += sse(reply->chunk(delta, lp, nullptr));
          }
        }
        if (done) {
          if (reply->finish == nlp::FinishReason::kError) {
            out += sse(ApiError(500, "Generation failed: " + reply->error, "server_error", "", "generation_failed").to_json());
          } else {
            json finish = finish_name(reply->finish);
            if (reply->tools) {
              const ParsedAnswer a = parse_tool_calls(reply->text);
              if (!a.content.empty()) out += sse(reply->chunk({{"content", a.content}}, nullptr, nullptr));
              if (!a.calls.empty()) {
                out += sse(reply->chunk({{"tool_calls", tool_calls_json(a.calls, reply->id, /*index=*/true)}}, nullptr, nullptr));
                finish = "tool_calls";
              }
            }
            out += sse(reply->chunk(reply->chat ? json::object() : json(""), nullptr, finish));
            if (include_usage) {
              json u = {{"id", reply->id}, {"object", reply->chat ? "chat.completion.chunk" : "text_completion"},
                        {"created", reply->created}, {"model", reply->model}, {"choices", json::array()},
                        {"usage", reply->usage()}, {"timings", reply->timings()}};
              out += sse(u);
            }
          }
          out += "data: [DONE]\n\n";
        }
        // The worker cancels a job whose client left while it was queued (at admission).
        const bool dropped = done && reply->finish == nlp::FinishReason::kCancelled;
        if (dropped || (!out.empty() && !sink.write(out.data(), out.size())) ||
            (out.empty() && peer_fd >= 0 && PeerSocket::closed(peer_fd))) {
          reply->job->release_peer();
          worker_ptr->cancel(reply->job);  // the client is gone: free the slot now
          metrics_ptr->client_disconnected(route);
          return false;
        }
        if (done) {
          reply->job->release_peer();
          sink.done();
        }
        return true;
      },
      [reply, worker_ptr](bool success) {
        reply->job->release_peer();
        if (!success) worker_ptr->cancel(reply->job);
      });
}

}  // namespace spore::serve
