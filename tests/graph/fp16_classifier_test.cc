// The chapter's third practice task (examples/common/fp16_classifier.h): the Fp16Linear binary
// classifier's loss curve is the same eagerly and with the training step compiled, bitwise
// (no pass reorders float work today), and the classifier learns the separating plane.
#include <gtest/gtest.h>

#include "common/fp16_classifier.h"

namespace spore {
namespace {

TEST(Fp16Classifier, EagerAndGraphLossCurvesAreEqual) {
  examples::ClassifierData d = examples::make_classifier_data();
  examples::ClassifierRun eager = examples::train_fp16_classifier(d, 60, false);
  examples::ClassifierRun graph = examples::train_fp16_classifier(d, 60, true);
  ASSERT_EQ(eager.losses.size(), graph.losses.size());
  for (size_t s = 0; s < eager.losses.size(); ++s) ASSERT_EQ(eager.losses[s], graph.losses[s]) << "step " << s;
  EXPECT_EQ(graph.jit.misses, 1);
  EXPECT_EQ(graph.jit.hits, 59);
  // Learned: ln 2 (a coin) at the start, far below at the end, and the points classified.
  EXPECT_NEAR(eager.losses.front(), 0.693, 0.05);
  EXPECT_LT(eager.losses.back(), 0.25);
  EXPECT_GE(eager.accuracy, 0.9);
  EXPECT_EQ(eager.accuracy, graph.accuracy);
}

}  // namespace
}  // namespace spore
