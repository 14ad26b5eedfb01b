// Sampling (NOTE [Generation]).
#include "nlp/generate/sampler.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error(ErrorCode::kValue, "sampling option " + field + ": " + why);
}

// Orders candidates by logit, highest first; equal logits by id, so the order (and with it top-k,
// top-p and the draw) never depends on the sort's stability.
struct ByLogit {
  const std::vector<double>* logits;
  bool operator()(int32_t a, int32_t b) const {
    const double la = (*logits)[(size_t)a], lb = (*logits)[(size_t)b];
    return la != lb ? la > lb : a < b;
  }
};

}  // namespace

void validate_sampling(const SamplingOptions& o) {
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    bad("temperature", std::to_string(o.temperature) + " is not a number >= 0 (0 is greedy)");
  if (o.top_k < 0) bad("top_k", std::to_string(o.top_k) + " is negative (0 turns it off)");
  if (!(o.top_p > 0 && o.top_p <= 1)) bad("top_p", std::to_string(o.top_p) + " is not in (0, 1] (1 turns it off)");
  if (!(o.min_p >= 0 && o.min_p <= 1)) bad("min_p", std::to_string(o.min_p) + " is not in [0, 1] (0 turns it off)");
  if (!std::isfinite(o.repetition_penalty) || o.repetition_penalty <= 0)
    bad("repetition_penalty", std::to_string(o.repetition_penalty) + " is not a number > 0 (1 turns it off)");
  if (!std::isfinite(o.presence_penalty)) bad("presence_penalty", "is not finite");
  if (!std::isfinite(o.frequency_penalty)) bad("frequency_penalty", "is not finite");
  if (o.penalty_last_n < -1)
    bad("penalty_last_n", std::to_string(o.penalty_last_n) + " is below -1 (-1: every token, 0: none)");
  if (o.top_logprobs < 0 || o.top_logprobs > 20)
    bad("top_logprobs", std::to_string(o.top_logprobs) + " is not in [0, 20]");
}

int32_t argmax(std::span<const double> v) {
  size_t best = 0;
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] > v[best]) best = i;  // strict: the first of equal values wins
  return (int32_t)best;
}

Sampler::Sampler(const SamplingOptions& options, int64_t vocab) : o_(options), vocab_(vocab) {
  validate_sampling(o_);
  if (vocab <= 0) throw Error(ErrorCode::kValue, "sampler: the vocabulary is empty");
  if (o_.seed) {
    rng_.seed(*o_.seed);
  } else {
    std::random_device rd;
    const uint64_t t = (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count();
    rng_.seed(t ^ ((uint64_t)rd() << 32) ^ rd());
  }
}

void Sampler::accept(int32_t token) {
  if (o_.penalty_last_n == 0) return;
  window_.push_back(token);
  ++counts_[token];
  if (o_.penalty_last_n > 0 && (int64_t)window_.size() > o_.penalty_last_n) {
    const int32_t old = window_.front();
    window_.pop_front();
    if (--counts_[old] == 0) counts_.erase(old);
  }
}

std::vector<double> Sampler::penalised(std::span<const float> logits) const {
  if ((int64_t)logits.size() != vocab_)
    throw Error(ErrorCode::kInternal, "sampler: a logits row of " + std::to_string(logits.size()) +
                                          " values for a vocabulary of " + std::to_string(vocab_));
  std::vector<double> l(logits.begin(), logits.end());
  for (size_t i = 0; i < l.size(); ++i)
    if (std::isnan(l[i]))
      throw Error(ErrorCode::kValue, "sampler: the model's logit for token " + std::to_string(i) +
                                         " is NaN (the model's weights or inputs are broken)");
  const bool rep = o_.repetition_penalty != 1.0;
  if (!rep && o_.presence_penalty == 0 && o_.frequency_penalty == 0) return l;
  for (const auto& [token, count] : counts_) {
    if (token < 0 || token >= vocab_) continue;
    double& x = l[(size_t)token];
    // llama.cpp and Hugging Face: divide a positive logit, multiply a negative one, so the token
    // always becomes less likely; then OpenAI's presence (once) and frequency (per occurrence).
    if (rep) x = x > 0 ? x / o_.repetition_penalty : x * o_.repetition_penalty;
    x -= o_.frequency_penalty * count + (count > 0 ? o_.presence_penalty : 0.0);
  }
  return l;
}

Sampler::Candidates Sampler::filter(const std::vector<double>& l) const {
  std::vector<int32_t> ids(l.size());
  std::iota(ids.begin(), ids.end(), 0);
  const ByLogit order{&l};
  bool sorted = false;
  if (o_.top_k > 0 && o_.top_k < (int64_t)ids.size()) {
    std::partial_sort(ids.begin(), ids.begin() + o_.top_k, ids.end(), order);
    ids.resize((size_t)o_.top_k);
    sorted = true;
  }
  // Softmax at temperature 1 over the candidates (llama.cpp applies top-p and min-p before the
  // temperature, on the model's own distribution).
  auto softmax = [&](std::vector<double>& p, double temperature) {
    double m = -std::numeric_limits<double>::infinity();
    for (int32_t id : ids) m = std::max(m, l[(size_t)id]);
    p.resize(ids.size());
    double sum = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
      const double x = l[(size_t)ids[i]];
      p[i] = x == -std::numeric_limits<double>::infinity() ? 0.0 : std::exp((x - m) / temperature);
      sum += p[i];
    }
    if (!(sum > 0))
      throw Error(ErrorCode::kValue, "sampler: every candidate token's logit is -inf (nothing can be sampled)");
    for (double& v : p) v /= sum;
  };
  std::vector<double> p;
  if (o_.top_p < 1.0) {
    if (!sorted) std::sort(ids.begin(), ids.end(), order);
    sorted = true;
    softmax(p, 1.0);
    double cum = 0;
    size_t keep = 0;
    while (keep < ids.size()) {
      cum += p[keep++];
      if (cum >= o_.top_p) break;  // the smallest prefix whose mass reaches top_p (at least one)
    }
    ids.resize(keep);
  }
  if (o_.min_p > 0) {
    // p >= min_p * p_max  <=>  logit >= max_logit + log(min_p): no normalisation needed.
    double m = -std::numeric_limits<double>::infinity();
    for (int32_t id : ids) m = std::max(m, l[(size_t)id]);
    const double floor = m + std::log(o_.min_p);
    std::erase_if(ids, [&](int32_t id) { return l[(size_t)id] < floor; });
  }
  Candidates c;
  softmax(c.probs, o_.temperature);
  c.ids = std::move(ids);
  return c;
}

std::vector<double> Sampler::distribution(std::span<const float> logits, const std::vector<uint64_t>* allowed) const {
  const std::vector<double> l = masked(logits, allowed);
  std::vector<double> out(l.size(), 0.0);
  if (o_.temperature == 0) {
    out[(size_t)argmax(l)] = 1.0;
    return out;
  }
  const Candidates c = filter(l);
  for (size_t i = 0; i < c.ids.size(); ++i) out[(size_t)c.ids[i]] = c.probs[i];
  return out;
}

std::vector<double> Sampler::masked(std::span<const float> logits, const std::vector<uint64_t>* allowed) const {
  std::vector<double> l = penalised(logits);
  if (allowed) apply_token_mask(l, *allowed);
  return l;
}

void apply_token_mask(std::span<double> l, const std::vector<uint64_t>& allowed) {
  if (allowed.size() * 64 < l.size())
    throw Error(ErrorCode::kInternal, "sampler: a token mask shorter than the vocabulary");
  constexpr double kOff = -std::numeric_limits<double>::infinity();
  for (size_t w = 0, base = 0; base < l.size(); ++w, base += 64) {
    const uint64_t bits = allowed[w];
    if (bits == ~uint64_t{0}) continue;
    const size_t n = std::min<size_t>(64, l.size() - base);
    if (bits == 0) {
      std::fill_n(l.begin() + (ptrdiff_t)base, n, kOff);
      continue;
    }
    for (size_t i = 0; i < n; ++i)
      if (!((bits >> i) & 1)) l[base + i] = kOff;
  }
}

int32_t Sampler::draw(std::span<const double> probs) {
  double total = 0;
  int32_t last = -1;
  for (size_t i = 0; i < probs.size(); ++i)
    if (probs[i] > 0) {
      total += probs[i];
      last = (int32_t)i;
    }
  if (last < 0) throw Error(ErrorCode::kValue, "sampler: a distribution with no mass (nothing can be drawn)");
  // Scaled by the total, so rounding in the weights never runs the cumulative sum short.
  const double r = uniform() * total;
  double cum = 0;
  for (size_t i = 0; i < probs.size(); ++i) {
    if (!(probs[i] > 0)) continue;
    cum += probs[i];
    if (r < cum) return (int32_t)i;
  }
  return last;
}

double Sampler::uniform() { return (double)(rng_() >> 11) * 0x1.0p-53; }

Draw Sampler::sample(std::span<const float> logits, const std::vector<uint64_t>* allowed) {
  const std::vector<double> l = masked(logits, allowed);
  Draw d;
  if (o_.temperature == 0) {
    d.id = argmax(l);
  } else {
    const Candidates c = filter(l);
    const double r = uniform();
    double cum = 0;
    d.id = c.ids.back();
    for (size_t i = 0; i < c.ids.size(); ++i) {
      cum += c.probs[i];
      if (r < cum) {
        d.id = c.ids[i];
        break;
      }
    }
  }
  report_logprobs(logits, d);
  return d;
}

Draw Sampler::verify(std::span<const float> logits, const std::vector<uint64_t>* allowed, int32_t draft,
                     std::span<const double> q) {
  if (o_.temperature == 0) return sample(logits, allowed);
  if (draft < 0 || draft >= vocab_ || (!q.empty() && (int64_t)q.size() != vocab_))
    throw Error(ErrorCode::kInternal, "sampler: a draft token or draft distribution that does not fit the vocabulary");
  const std::vector<double> p = distribution(logits, allowed);
  const double px = p[(size_t)draft], qx = q.empty() ? 1.0 : q[(size_t)draft];
  Draw d;
  // Accept with probability min(1, p/q): u < p/q, written without the division (q may be 0 when
  // the draft came from elsewhere; then it is always rejected unless p covers it).
  if (qx > 0 && uniform() * qx < px) {
    d.id = draft;
  } else {
    std::vector<double> residual(p.size());
    for (size_t i = 0; i < p.size(); ++i) residual[i] = std::max(0.0, p[i] - (q.empty() ? (i == (size_t)draft ? 1.0 : 0.0) : q[i]));
    // No residual mass means p <= q everywhere, so p == q and the draft is always accepted; only
    // rounding gets here, and p itself is then the right distribution.
    const bool any = std::any_of(residual.begin(), residual.end(), [](double v) { return v > 0; });
    d.id = draw(any ? residual : p);
  }
  report_logprobs(logits, d);
  return d;
}

void Sampler::report_logprobs(std::span<const float> logits, Draw& d) const {
  if (!o_.logprobs && o_.top_logprobs == 0) return;
  // The model's own distribution (raw logits), as OpenAI's logprobs report it.
  double m = -std::numeric_limits<double>::infinity();
  for (float x : logits) m = std::max(m, (double)x);
  double sum = 0;
  for (float x : logits) sum += std::exp((double)x - m);
  const double lse = m + std::log(sum);
  d.logprob = (float)((double)logits[(size_t)d.id] - lse);
  if (o_.top_logprobs > 0) {
    std::vector<double> raw(logits.begin(), logits.end());
    std::vector<int32_t> ids(raw.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t n = std::min<size_t>((size_t)o_.top_logprobs, ids.size());
    std::partial_sort(ids.begin(), ids.begin() + (ptrdiff_t)n, ids.end(), ByLogit{&raw});
    for (size_t i = 0; i < n; ++i) d.top.push_back({ids[i], (float)(raw[(size_t)ids[i]] - lse)});
  }
}

}  // namespace spore::nlp::detail
