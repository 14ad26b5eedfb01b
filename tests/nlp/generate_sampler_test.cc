// The sampler against float64 references written here from the definitions (llama.cpp's chain:
// penalties, top-k, top-p, min-p, temperature): the distribution after each filter, the
// frequencies of many seeded draws within statistical bounds, seed determinism, logprobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "nlp/generate/sampler.h"
#include "spore/error.h"
#include "test_util.h"

namespace {

using spore::ErrorCode;
using spore::nlp::SamplingOptions;
using spore::nlp::detail::Sampler;

std::vector<float> random_logits(int n, uint32_t seed, double spread = 3.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0.0, spread);
  std::vector<float> l((size_t)n);
  for (float& x : l) x = (float)d(g);
  return l;
}

// The reference: (logit, id) pairs, filtered one definition at a time.
struct Ref {
  std::vector<std::pair<double, int>> c;  // candidates, any order
  explicit Ref(const std::vector<double>& logits) {
    for (size_t i = 0; i < logits.size(); ++i) c.push_back({logits[i], (int)i});
  }
  void sort_desc() {
    std::sort(c.begin(), c.end(), [](auto a, auto b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  }
  std::vector<double> probs(double t) const {  // softmax over the candidates at temperature t
    double m = -1e300, s = 0;
    for (auto [l, i] : c) m = std::max(m, l);
    std::vector<double> p;
    for (auto [l, i] : c) p.push_back(std::exp((l - m) / t)), s += p.back();
    for (double& x : p) x /= s;
    return p;
  }
  void top_k(int k) {
    sort_desc();
    if (k > 0 && k < (int)c.size()) c.resize((size_t)k);
  }
  void top_p(double p) {
    sort_desc();
    const auto pr = probs(1.0);
    double cum = 0;
    size_t n = 0;
    while (n < c.size() && cum < p) cum += pr[n++];
    c.resize(std::max<size_t>(n, 1));
  }
  void min_p(double mp) {
    const auto pr = probs(1.0);
    const double pmax = *std::max_element(pr.begin(), pr.end());
    std::vector<std::pair<double, int>> kept;
    for (size_t i = 0; i < c.size(); ++i)
      if (pr[i] >= mp * pmax * (1 - 1e-12)) kept.push_back(c[i]);
    c = kept;
  }
  std::vector<double> full(int vocab, double t) const {
    std::vector<double> out((size_t)vocab, 0.0);
    const auto p = probs(t);
    for (size_t i = 0; i < c.size(); ++i) out[(size_t)c[i].second] = p[i];
    return out;
  }
};

std::vector<double> as_double(const std::vector<float>& l) { return {l.begin(), l.end()}; }

void expect_dist(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-12) << what << " id " << i;
}

TEST(GenerateSampler, GreedyIsArgmaxTiesToLowestId) {
  SamplingOptions o;
  o.temperature = 0;
  Sampler s(o, 6);
  const std::vector<float> l = {0.5f, 2.0f, -1.0f, 2.0f, 1.9f, 2.0f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.sample(l).id, 1);
  const auto d = s.distribution(l);
  EXPECT_EQ(d[1], 1.0);
  EXPECT_EQ(std::count(d.begin(), d.end(), 0.0), 5);
}

TEST(GenerateSampler, EachFilterMatchesItsDefinition) {
  const int V = 200;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto l = random_logits(V, seed);
    {
      SamplingOptions o;  // temperature alone
      o.temperature = 0.7;
      Ref r(as_double(l));
      expect_dist(Sampler(o, V).distribution(l), r.full(V, 0.7), "temperature");
    }
    {
      SamplingOptions o;
      o.top_k = 10;
      Ref r(as_double(l));
      r.top_k(10);
      expect_dist(Sampler(o, V).distribution(l), r.full(V, 1.0), "top_k");
    }
    for (double p : {0.05, 0.5, 0.9, 0.999}) {
      SamplingOptions o;
      o.top_p = p;
      o.temperature = 1.3;  // after the filter: top-p sees the model's own distribution
      Ref r(as_double(l));
      r.top_p(p);
      expect_dist(Sampler(o, V).distribution(l), r.full(V, 1.3), "top_p " + std::to_string(p));
    }
    for (double mp : {0.01, 0.2, 1.0}) {
      SamplingOptions o;
      o.min_p = mp;
      Ref r(as_double(l));
      r.min_p(mp);
      expect_dist(Sampler(o, V).distribution(l), r.full(V, 1.0), "min_p " + std::to_string(mp));
    }
    {
      SamplingOptions o;  // the whole chain
      o.top_k = 40;
      o.top_p = 0.8;
      o.min_p = 0.05;
      o.temperature = 0.6;
      Ref r(as_double(l));
      r.top_k(40);
      r.top_p(0.8);
      r.min_p(0.05);
      expect_dist(Sampler(o, V).distribution(l), r.full(V, 0.6), "chain");
    }
  }
}

TEST(GenerateSampler, PenaltiesOverTheWindow) {
  const int V = 50;
  const auto l = random_logits(V, 7);
  SamplingOptions o;
  o.repetition_penalty = 1.3;
  o.presence_penalty = 0.4;
  o.frequency_penalty = 0.25;
  o.penalty_last_n = 6;
  Sampler s(o, V);
  const std::vector<int32_t> seen = {3, 9, 9, 4, 3, 3, 9, 12, 40};  // the window: the last 6
  for (int32_t t : seen) s.accept(t);
  std::map<int, int> count;
  for (size_t i = seen.size() - 6; i < seen.size(); ++i) ++count[seen[i]];
  std::vector<double> want = as_double(l);
  for (auto [t, n] : count) {
    double& x = want[(size_t)t];
    x = x > 0 ? x / 1.3 : x * 1.3;
    x -= 0.25 * n + 0.4;
  }
  const auto got = s.penalised(l);
  for (int i = 0; i < V; ++i) EXPECT_NEAR(got[(size_t)i], want[(size_t)i], 1e-12) << i;
  EXPECT_EQ(got[12], want[12]);
  EXPECT_NE(got[3], (double)l[3]);
  // penalty_last_n 0: nothing is remembered; -1: everything.
  SamplingOptions off = o;
  off.penalty_last_n = 0;
  Sampler s0(off, V);
  for (int32_t t : seen) s0.accept(t);
  EXPECT_EQ(s0.penalised(l), as_double(l));
  SamplingOptions all = o;
  all.penalty_last_n = -1;
  all.repetition_penalty = 1.0;
  all.presence_penalty = 0;
  Sampler sa(all, V);
  for (int32_t t : seen) sa.accept(t);
  EXPECT_NEAR(sa.penalised(l)[3], l[3] - 0.25 * 3, 1e-12);
  // Greedy sees the penalised logits: penalising the argmax hard moves it.
  SamplingOptions g;
  g.temperature = 0;
  g.repetition_penalty = 1000;
  Sampler sg(g, V);
  const int32_t top = spore::nlp::detail::argmax(as_double(l));
  EXPECT_EQ(Sampler(g, V).sample(l).id, top);
  sg.accept(top);
  EXPECT_NE(sg.sample(l).id, top);
}

TEST(GenerateSampler, DrawFrequenciesMatchTheDistribution) {
  const int V = 12, N = 40000;
  const auto l = random_logits(V, 11, 1.0);
  SamplingOptions o;
  o.temperature = 0.8;
  o.top_k = 8;
  o.seed = 1234;
  Sampler s(o, V);
  const auto p = s.distribution(l);
  std::vector<int> n((size_t)V, 0);
  for (int i = 0; i < N; ++i) ++n[(size_t)s.sample(l).id];
  double chi2 = 0;
  int dof = -1;
  for (int i = 0; i < V; ++i) {
    if (p[(size_t)i] == 0) {
      EXPECT_EQ(n[(size_t)i], 0) << "filtered-out token " << i << " was drawn";
      continue;
    }
    const double e = N * p[(size_t)i];
    // Each count within 5 binomial standard deviations.
    EXPECT_NEAR(n[(size_t)i], e, 5 * std::sqrt(e * (1 - p[(size_t)i])) + 1) << i;
    chi2 += (n[(size_t)i] - e) * (n[(size_t)i] - e) / e;
    ++dof;
  }
  EXPECT_EQ(dof, 7);
  EXPECT_LT(chi2, 24.3);  // chi-square, 7 degrees of freedom, p = 0.001
}

TEST(GenerateSampler, SeedGivesTheSameTokens) {
  const int V = 100;
  const auto l = random_logits(V, 5, 0.5);
  auto run = [&](uint64_t seed) {
    SamplingOptions o;
    o.seed = seed;
    o.top_p = 0.95;
    Sampler s(o, V);
    std::vector<int32_t> ids;
    for (int i = 0; i < 64; ++i) ids.push_back(s.sample(l).id);
    return ids;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
  // The RNG's output is fixed by the standard (mt19937_64) and converted by hand: the first draw
  // of seed 42 is the same on every platform. u = (first output >> 11) * 2^-53.
  std::mt19937_64 ref(42);
  const double u = (double)(ref() >> 11) * 0x1.0p-53;
  SamplingOptions o;
  o.seed = 42;
  Sampler s(o, V);
  const auto p = s.distribution(l);
  double cum = 0;
  int want = V - 1;
  for (int i = 0; i < V; ++i) {
    cum += p[(size_t)i];
    if (u < cum) {
      want = i;
      break;
    }
  }
  EXPECT_EQ(s.sample(l).id, want);  // no filter: candidates in id order
}

TEST(GenerateSampler, LogprobsAreTheModelsLogSoftmax) {
  const int V = 30;
  const auto l = random_logits(V, 9);
  SamplingOptions o;
  o.temperature = 0;
  o.top_logprobs = 5;
  o.repetition_penalty = 2.0;  // penalties do not change the reported logprobs
  Sampler s(o, V);
  s.accept(3);
  const auto d = s.sample(l);
  double m = -1e300, sum = 0;
  for (float x : l) m = std::max(m, (double)x);
  for (float x : l) sum += std::exp(x - m);
  const double lse = m + std::log(sum);
  EXPECT_NEAR(d.logprob, l[(size_t)d.id] - lse, 1e-5);
  ASSERT_EQ(d.top.size(), 5u);
  std::vector<int> order(V);
  for (int i = 0; i < V; ++i) order[(size_t)i] = i;
  std::sort(order.begin(), order.end(), [&](int a, int b) { return l[(size_t)a] > l[(size_t)b]; });
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(d.top[i].id, order[i]);
    EXPECT_NEAR(d.top[i].logprob, l[(size_t)order[i]] - lse, 1e-5);
  }
}

TEST(GenerateSampler, BadOptionsAndLogitsAreTypedErrors) {
  auto bad = [](auto set, const std::string& field) {
    SamplingOptions o;
    set(o);
    spore::test::expect_error([&] { Sampler(o, 10); }, ErrorCode::kValue, field);
  };
  bad([](SamplingOptions& o) { o.temperature = -1; }, "temperature");
  bad([](SamplingOptions& o) { o.temperature = NAN; }, "temperature");
  bad([](SamplingOptions& o) { o.top_p = 0; }, "top_p");
  bad([](SamplingOptions& o) { o.top_p = 1.5; }, "top_p");
  bad([](SamplingOptions& o) { o.min_p = -0.1; }, "min_p");
  bad([](SamplingOptions& o) { o.top_k = -3; }, "top_k");
  bad([](SamplingOptions& o) { o.repetition_penalty = 0; }, "repetition_penalty");
  bad([](SamplingOptions& o) { o.penalty_last_n = -2; }, "penalty_last_n");
  bad([](SamplingOptions& o) { o.top_logprobs = 21; }, "top_logprobs");
  Sampler s(SamplingOptions{}, 3);
  spore::test::expect_error([&] { s.sample(std::vector<float>{0.f, NAN, 1.f}); }, ErrorCode::kValue, "token 1 is NaN");
  const float inf = INFINITY;
  spore::test::expect_error([&] { s.sample(std::vector<float>{-inf, -inf, -inf}); }, ErrorCode::kValue, "-inf");
}

}  // namespace
