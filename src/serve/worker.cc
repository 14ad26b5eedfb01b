#include "serve/worker.h"

#include <chrono>

#include "serve/peer_socket.h"
#include "spore/error.h"

namespace spore::serve {

bool Job::take(std::vector<nlp::SequenceEvent>& out, int timeout_ms) {
  std::unique_lock<std::mutex> lock(mu);
  cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done || !events.empty(); });
  while (!events.empty()) {
    out.push_back(std::move(events.front()));
    events.pop_front();
  }
  return done;
}

void Job::watch_peer(int fd) {
  std::lock_guard<std::mutex> lock(peer_mu_);
  peer_fd_ = fd;
}

void Job::release_peer() {
  std::lock_guard<std::mutex> lock(peer_mu_);
  peer_fd_ = -1;
}

bool Job::peer_gone() {
  std::lock_guard<std::mutex> lock(peer_mu_);
  return peer_fd_ >= 0 && PeerSocket::closed(peer_fd_);
}

Worker::Worker(const nlp::LoadedModel& model, const nlp::EngineOptions& options, int64_t queue_limit, Metrics& metrics)
    : engine_(model, options),
      metrics_(metrics),
      capacity_(options.slots + queue_limit),
      context_(engine_.context()),
      slots_(engine_.slots()),
      kv_bytes_(engine_.memory().kv_cache),
      memory_(engine_.memory()),
      prefix_cache_(options.prefix_cache) {
  thread_ = std::thread([this] { loop(); });
}

Worker::~Worker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

bool Worker::submit(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= capacity_) return false;
    ++in_flight_;
    incoming_.push_back(job);
  }
  cv_.notify_all();
  return true;
}

void Worker::cancel(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancels_.push_back(job);
  }
  cv_.notify_all();
}

Gauges Worker::gauges() const {
  std::lock_guard<std::mutex> lock(mu_);
  Gauges g;
  g.ready = true;
  g.queue_depth = queued_ + (int64_t)incoming_.size();
  g.active_slots = active_;
  g.slots = slots_;
  g.kv_tokens_used = kv_used_;
  g.prefix_cache_tokens_held = prefix_held_;
  g.kv_tokens_capacity = slots_ * context_;
  g.kv_bytes = kv_bytes_;
  return g;
}

// Called by the worker thread, mu_ held. Marks the job done; its events stay readable.
void Worker::finish(const std::shared_ptr<Job>& job, const nlp::Timings* t) {
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->done) return;
    job->done = true;
    if (t) job->timings = *t;
  }
  job->cv.notify_all();
  --in_flight_;
  if (t) {
    metrics_.tokens(t->prompt_tokens, t->generated_tokens);
    if (prefix_cache_) metrics_.prefix_lookup(t->prompt_tokens, t->cached_prompt_tokens);
    if (t->generated_tokens > 0) metrics_.first_token(t->first_token_ms / 1e3);
    if (t->generated_tokens > 1)
      metrics_.per_output_token((t->total_ms - t->first_token_ms) / 1e3 / (double)(t->generated_tokens - 1));
  }
}

void Worker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || !incoming_.empty() || !cancels_.empty() || !running_.empty(); });
    if (stop_) break;
    // Admissions and cancellations between steps.
    while (!incoming_.empty()) {
      std::shared_ptr<Job> job = std::move(incoming_.front());
      incoming_.pop_front();
      try {
        running_[engine_.add(job->prompt, job->options, [job] { return !job->peer_gone(); })] = job;
      } catch (const Error& e) {
        nlp::SequenceEvent ev;
        ev.finished = nlp::FinishReason::kError;
        ev.error = e.what();
        {
          std::lock_guard<std::mutex> jl(job->mu);
          job->events.push_back(std::move(ev));
        }
        finish(job, nullptr);
      }
    }
    for (const std::shared_ptr<Job>& job : cancels_) {
      for (auto it = running_.begin(); it != running_.end(); ++it) {
        if (it->second != job) continue;
        engine_.cancel(it->first);  // frees the slot now
        nlp::Timings t;
        try {
          t = engine_.timings(it->first);
        } catch (const Error&) {
        }
        running_.erase(it);
        finish(job, &t);
        break;
      }
    }
    cancels_.clear();
    active_ = engine_.active();
    queued_ = engine_.queued();
    prefix_held_ = (int64_t)engine_.prefix_cache_stats().held_tokens;
    if (running_.empty()) {
      active_ = queued_ = kv_used_ = 0;
      continue;  // nothing to step (a cancelled sequence's event waits in the engine, unread)
    }
    // The step runs without the lock, so HTTP threads can submit, cancel and read gauges.
    std::vector<nlp::SequenceEvent> events;
    std::string step_error;
    lock.unlock();
    try {
      events = engine_.step();
    } catch (const std::exception& e) {
      step_error = e.what();
    }
    lock.lock();
    if (!step_error.empty()) {
      // A failed forward pass fails every running job (the engine's state is unknown).
      for (auto& [seq, job] : running_) {
        nlp::SequenceEvent ev;
        ev.sequence = seq;
        ev.finished = nlp::FinishReason::kError;
        ev.error = step_error;
        {
          std::lock_guard<std::mutex> jl(job->mu);
          job->events.push_back(std::move(ev));
        }
        engine_.cancel(seq);
        finish(job, nullptr);
      }
      running_.clear();
      continue;
    }
    for (nlp::SequenceEvent& ev : events) {
      auto it = running_.find(ev.sequence);
      if (it == running_.end()) continue;  // cancelled meanwhile
      std::shared_ptr<Job> job = it->second;
      const bool finished = ev.finished != nlp::FinishReason::kNone;
      {
        std::lock_guard<std::mutex> jl(job->mu);
        if (ev.token) ++job->generated;
        job->events.push_back(std::move(ev));
      }
      job->cv.notify_all();
      if (finished) {
        nlp::Timings t = engine_.timings(it->first);
        running_.erase(it);
        finish(job, &t);
      }
    }
    active_ = engine_.active();
    queued_ = engine_.queued();
    int64_t used = 0;
    for (auto& [seq, job] : running_) {
      std::lock_guard<std::mutex> jl(job->mu);
      if (job->generated > 0 || !job->events.empty()) used += (int64_t)job->prompt.size() + job->generated;
    }
    kv_used_ = used;
    prefix_held_ = (int64_t)engine_.prefix_cache_stats().held_tokens;
  }
  for (auto& [seq, job] : running_) finish(job, nullptr);
}

}  // namespace spore::serve
