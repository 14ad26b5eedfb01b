// Linked against spore_graph, spore_format and spore_core only (NOTE [Graph library layering]):
// if the graph library referred to nn, autograd, optim, data or train, this program would not
// link. It does real work with each part (tracing and compiling with the passes and the memory
// plan, a traced while_loop run by the executor, export to the IR), checked against values
// computed here by hand, so a stub library would not pass either.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "spore/control_flow.h"
#include "spore/export.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace {
int failures = 0;
void expect_near(const char* what, float got, float want) {
  if (std::fabs(got - want) > 1e-6f) {
    std::fprintf(stderr, "graph_only_link: %s = %g, want %g\n", what, got, want);
    ++failures;
  }
}
}  // namespace

int main() {
  using namespace spore;
  // relu(x * 2 + 1), compiled (the second call runs the graph, fused by the passes).
  JitFunction f = jit(TensorFn([](const std::vector<Tensor>& in) { return relu(add(mul(in[0], 2.0), 1.0)); }));
  const Tensor x = Tensor::from_vector<float>({-3, -0.25f, 0, 2}, Shape{4});
  f({x});
  const auto y = f({x})[0].to_vector<float>();
  const float want[4] = {0, 0.5f, 1, 5};
  for (int i = 0; i < 4; ++i) expect_near("relu(2x + 1)", y[i], want[i]);
  if (f.stats().hits != 1) std::fprintf(stderr, "graph_only_link: no cache hit\n"), ++failures;

  // A traced while_loop: double s until it exceeds 100 (1 -> 128 in 7 steps).
  JitFunction loop = jit(TensorsFn([](const std::vector<Tensor>& in) {
    const BranchFn below = [](const std::vector<Tensor>& s) {
      return std::vector<Tensor>{le(sum(s[0]), scalar_like(sum(s[0]), 100.0))};
    };
    const BranchFn twice = [](const std::vector<Tensor>& s) { return std::vector<Tensor>{mul(s[0], 2.0)}; };
    return while_loop(below, twice, {in[0]});
  }));
  const Tensor one = Tensor::from_vector<float>({1}, Shape{1});
  loop({one});
  expect_near("while_loop", loop({one})[0].to_vector<float>()[0], 128);

  // Export of the traced function to the IR, read back.
  const auto path = std::filesystem::temp_directory_path() / ("spore_graph_only_" + std::to_string(getpid()) + ".spore");
  export_model(TensorsFn([](const std::vector<Tensor>& in) { return std::vector<Tensor>{neg(in[0])}; }), {x}, path);
  const ir::Model m = ir::read_model(path);
  std::filesystem::remove(path);
  if (m.graph.nodes.size() != 1 || m.graph.nodes[0].def->name != std::string("neg"))
    std::fprintf(stderr, "graph_only_link: the exported graph is not one neg node\n"), ++failures;

  if (failures) return 1;
  std::printf("graph_only_link: ok\n");
  return 0;
}
