// forward over several chunks: a prompt split in two calls, and two sequences in one call on
// different slots, give the one-shot logits (float32 cache: up to float32 summation order).
#include <gtest/gtest.h>

#include "model_test_util.h"

namespace spore::test::llm {
namespace {

class ChunkedTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ChunkedTest, PromptInTwoChunksEqualsOneShot) {
  const Reference ref = load_reference(GetParam());
  const auto m = nlp::load_model(fixture_model(GetParam(), false));
  const auto& p = ref.prompts[2];
  auto cache = m.lm->make_cache(1, (int64_t)p.size(), DType::kFloat32);
  const std::vector<int32_t> a(p.begin(), p.begin() + 5), b(p.begin() + 5, p.end());
  nlp::SequenceChunk c1{0, 0, a, true}, c2{0, 5, b, true};
  const Tensor l1 = m.lm->forward({&c1, 1}, *cache);
  const Tensor l2 = m.lm->forward({&c2, 1}, *cache);
  const Tensor& want = ref.logits.at("logits_2");
  const int64_t V = want.size(1);
  EXPECT_LT(logits_diff(l1, slice(want, 0, 0, 5).contiguous()), 1e-4);
  EXPECT_LT(logits_diff(l2, slice(want, 0, 5, (int64_t)p.size()).contiguous()), 1e-4);
  EXPECT_EQ(l2.size(1), V);
}

TEST_P(ChunkedTest, TwoSequencesInOneCall) {
  const Reference ref = load_reference(GetParam());
  const auto m = nlp::load_model(fixture_model(GetParam(), true));
  auto cache = m.lm->make_cache(3, 16, DType::kFloat32);
  // Slot 2 holds prompt 1 (all logits), slot 0 prompt 0 (last logits only): rows in chunk order.
  nlp::SequenceChunk cs[2] = {{2, 0, ref.prompts[1], true}, {0, 0, ref.prompts[0], false}};
  const Tensor l = m.lm->forward(cs, *cache);
  const Tensor& w1 = ref.logits.at("logits_1");
  const Tensor& w0 = ref.logits.at("logits_0");
  const int64_t n1 = w1.size(0), n0 = w0.size(0);
  ASSERT_EQ(l.size(0), n1 + 1);
  EXPECT_LT(logits_diff(slice(l, 0, 0, n1).contiguous(), w1), 1e-4);
  EXPECT_LT(logits_diff(slice(l, 0, n1, n1 + 1).contiguous(), slice(w0, 0, n0 - 1, n0).contiguous()), 1e-4);
  // Then both decode one greedy step together, each on its own cache rows.
  const auto v = l.to_vector<float>();
  const size_t V = (size_t)w0.size(1);
  const std::vector<int32_t> t1{argmax_row(v, (size_t)n1 - 1, V)}, t0{argmax_row(v, (size_t)n1, V)};
  nlp::SequenceChunk step[2] = {{0, n0, t0}, {2, n1, t1}};
  const Tensor s = m.lm->forward(step, *cache);
  const auto sv = s.to_vector<float>();
  EXPECT_EQ(argmax_row(sv, 0, V), ref.greedy[1]);  // prompt 0's second greedy token
  // Slot 2's step against a fresh one-sequence run of prompt 1 + its token.
  std::vector<int32_t> p1 = ref.prompts[1];
  p1.push_back(t1[0]);
  auto c2 = m.lm->make_cache(1, 16, DType::kFloat32);
  nlp::SequenceChunk one{0, 0, p1};
  EXPECT_LT(logits_diff(slice(s, 0, 1, 2).contiguous(), m.lm->forward({&one, 1}, *c2)), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Families, ChunkedTest, ::testing::ValuesIn(families()));

}  // namespace
}  // namespace spore::test::llm
