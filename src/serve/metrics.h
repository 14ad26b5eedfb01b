// Server figures in Prometheus's text exposition format (GET /metrics). Counters and histograms
// are updated from HTTP threads and the worker; gauges are read from the worker when rendered.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace spore::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size(), 0) {}
  void observe(double v);
  void render(std::string& out, const std::string& name, const std::string& help) const;  // caller locks

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket (not cumulative)
  uint64_t count_ = 0;
  double sum_ = 0;
};

struct Gauges {
  int64_t queue_depth = 0, active_slots = 0, slots = 0;
  int64_t kv_tokens_used = 0, kv_tokens_capacity = 0, prefix_cache_tokens_held = 0;
  uint64_t kv_bytes = 0;
  bool ready = false;
};

class Metrics {
 public:
  Metrics();
  void request(const std::string& route, int status);
  void tokens(int64_t prompt, int64_t generated);
  void first_token(double seconds);
  void per_output_token(double seconds);
  void rejected_queue_full();
  // A request's prompt went through the prefix cache: `cached` of `prompt` tokens were reused.
  void prefix_lookup(int64_t prompt, int64_t cached);
  // A request whose client left before its answer was complete (cancelled; counted as 499).
  void client_disconnected(const std::string& route);
  std::string render(const Gauges& g) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, queue_full_ = 0;
  uint64_t prefix_lookups_ = 0, prefix_hits_ = 0, prefix_cached_tokens_ = 0;
  std::map<std::string, uint64_t> disconnects_;  // by route
  Histogram ttft_, tpot_;
};

}  // namespace spore::serve
