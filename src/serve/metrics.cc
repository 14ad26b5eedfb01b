#include "serve/metrics.h"

#include <cstdio>

namespace spore::serve {

namespace {
std::string num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}
}  // namespace

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds_.size(); ++i)
    if (v <= bounds_[i]) {
      ++counts_[i];
      break;
    }
  ++count_;
  sum_ += v;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " histogram\n";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + num(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + num(sum_) + "\n" + name + "_count " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      tpot_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}) {}

void Metrics::request(const std::string& route, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{route, status}];
}

void Metrics::tokens(int64_t prompt, int64_t generated) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += (uint64_t)prompt;
  generated_tokens_ += (uint64_t)generated;
}

void Metrics::first_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  ttft_.observe(s);
}

void Metrics::per_output_token(double s) {
  std::lock_guard<std::mutex> lock(mu_);
  tpot_.observe(s);
}

void Metrics::rejected_queue_full() {
  std::lock_guard<std::mutex> lock(mu_);
  ++queue_full_;
}

void Metrics::prefix_lookup(int64_t prompt, int64_t cached) {
  std::lock_guard<std::mutex> lock(mu_);
  ++prefix_lookups_;
  if (cached > 0) ++prefix_hits_;
  prefix_cached_tokens_ += (uint64_t)cached;
  (void)prompt;
}

void Metrics::client_disconnected(const std::string& route) {
  std::lock_guard<std::mutex> lock(mu_);
  ++disconnects_[route];
}

std::string Metrics::render(const Gauges& g) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  out += "# HELP spore_requests_total HTTP requests answered, by route and status\n# TYPE spore_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "spore_requests_total{route=\"" + key.first + "\",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  auto gauge = [&](const char* name, const char* help, double v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " gauge\n" + name + " " + num(v) + "\n";
  };
  counter("spore_prompt_tokens_total", "Prompt tokens of finished requests", prompt_tokens_);
  counter("spore_generated_tokens_total", "Tokens generated for finished requests", generated_tokens_);
  counter("spore_queue_full_total", "Requests refused with 503 because the queue was full", queue_full_);
  counter("spore_prefix_cache_lookups_total", "Requests admitted with the prefix cache on", prefix_lookups_);
  counter("spore_prefix_cache_hits_total", "Requests that reused KV cache rows of an earlier request", prefix_hits_);
  counter("spore_prefix_cache_cached_tokens_total", "Prompt tokens served from the prefix cache", prefix_cached_tokens_);
  out += "# HELP spore_client_disconnects_total Requests cancelled because the client left before the answer was "
         "complete (logged with status 499)\n# TYPE spore_client_disconnects_total counter\n";
  for (const auto& [route, n] : disconnects_)
    out += "spore_client_disconnects_total{route=\"" + route + "\"} " + std::to_string(n) + "\n";
  gauge("spore_ready", "1 when the model is loaded", g.ready ? 1 : 0);
  gauge("spore_queue_depth", "Requests waiting for a slot", (double)g.queue_depth);
  gauge("spore_active_slots", "Slots generating now", (double)g.active_slots);
  gauge("spore_slots", "Slots (sequences decoded together)", (double)g.slots);
  gauge("spore_kv_cache_tokens_used", "KV cache rows held by active sequences", (double)g.kv_tokens_used);
  gauge("spore_kv_cache_tokens_capacity", "KV cache rows (slots x context)", (double)g.kv_tokens_capacity);
  gauge("spore_prefix_cache_tokens_held", "KV cache rows free slots keep for a later prompt with the same prefix",
        (double)g.prefix_cache_tokens_held);
  gauge("spore_kv_cache_bytes", "KV cache bytes allocated", (double)g.kv_bytes);
  ttft_.render(out, "spore_time_to_first_token_seconds", "From request to first generated token");
  tpot_.render(out, "spore_time_per_output_token_seconds", "Decode time per generated token after the first");
  return out;
}

}  // namespace spore::serve
