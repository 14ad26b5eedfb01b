// The chapter's third practice task: the Fp16Linear binary classifier
// (examples/common/fp16_classifier.h) trained eagerly and in graph mode (the whole training step
// compiled by spore::jit), printing both loss curves and whether they are equal step for step.
//   build/release/bin/examples/fp16_classifier [--steps 100]
// Exit status 0 when the curves are bitwise equal and the classifier learned (accuracy >= 0.9).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "common/fp16_classifier.h"
#include "spore/error.h"

int main(int argc, char** argv) {
  using namespace spore;
  CLI::App app{"Train the chapter's Fp16Linear binary classifier eagerly and in graph mode"};
  int steps = 100;
  app.add_option("--steps", steps, "Adam steps in each mode")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);
  try {
    examples::ClassifierData d = examples::make_classifier_data();
    examples::ClassifierRun eager = examples::train_fp16_classifier(d, steps, false);
    examples::ClassifierRun graph = examples::train_fp16_classifier(d, steps, true);
    int first_diff = -1;
    for (int s = 0; s < steps && first_diff < 0; ++s)
      if (eager.losses[s] != graph.losses[s]) first_diff = s;
    std::printf("step  eager loss   graph loss\n");
    for (int s = 0; s < steps; ++s)
      if (s < 5 || s % 10 == 0 || s == steps - 1) std::printf("%4d  %.6f   %.6f\n", s, eager.losses[s], graph.losses[s]);
    std::printf("accuracy: eager %.3f, graph %.3f; graph mode: %lld compiled runs, trace %.2f ms, compile %.2f ms\n",
                eager.accuracy, graph.accuracy, (long long)graph.jit.hits, graph.jit.last_trace_ms,
                graph.jit.last_compile_ms);
    if (first_diff >= 0) {
      std::printf("the loss curves differ from step %d on\n", first_diff);
      return 1;
    }
    std::printf("the loss curves are equal at every one of the %d steps\n", steps);
    return eager.accuracy >= 0.9 ? 0 : 1;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
