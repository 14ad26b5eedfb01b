// Linked against spore_lite, spore_graph, spore_format and spore_core only (NOTE [Lite runtime],
// NOTE [Lite control flow]): if Lite referred to autograd, nn, optim or data, this program would
// not link. It writes a small IR file, builds it in Lite and checks the prediction against values
// computed by hand, so a stub library would not pass either.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "spore/ir.h"
#include "spore/lite.h"

int main() {
  using namespace spore;
  // y = relu(x * w + b) over 4 elements.
  ir::Model m;
  auto fixed = [](int64_t n) { return std::vector<ir::Dim>{{n, {}}}; };
  m.graph.values = {
      {"x", ir::ValueKind::kInput, DType::kFloat32, fixed(4), {}},
      {"w", ir::ValueKind::kParameter, DType::kFloat32, fixed(4), Tensor::from_vector<float>({1, -2, 3, -4}, Shape{4})},
      {"b", ir::ValueKind::kParameter, DType::kFloat32, fixed(4), Tensor::from_vector<float>({0.5f, 0.5f, -10, 1}, Shape{4})},
      {"", ir::ValueKind::kNode, DType::kFloat32, fixed(4), {}},
      {"", ir::ValueKind::kNode, DType::kFloat32, fixed(4), {}},
      {"y", ir::ValueKind::kNode, DType::kFloat32, fixed(4), {}},
  };
  m.graph.nodes = {{find_op("mul"), {}, {0, 1}, {3}, {}}, {find_op("add"), {}, {3, 2}, {4}, {}}, {find_op("relu"), {}, {4}, {5}, {}}};
  m.graph.inputs = {0};
  m.graph.outputs = {5};
  const auto path = std::filesystem::temp_directory_path() / ("spore_lite_only_" + std::to_string(getpid()) + ".spore");
  ir::write_model(path, m);
  lite::Model model = lite::Model::build_from_file(path, lite::ModelType::kSpore, lite::Context{{"cuda", "cpu"}, 1});
  std::filesystem::remove(path);
  const auto y = model.predict({Tensor::from_vector<float>({1, 1, 1, 1}, Shape{4})})[0].to_vector<float>();
  const float want[4] = {1.5f, 0, 0, 0};  // relu(1 + .5), relu(-2 + .5), relu(3 - 10), relu(-4 + 1)
  for (int i = 0; i < 4; ++i)
    if (std::fabs(y[i] - want[i]) != 0) {
      std::fprintf(stderr, "lite_only_link: y[%d] = %g, want %g\n", i, y[i], want[i]);
      return 1;
    }
  if (model.target() != "cpu") return std::fprintf(stderr, "lite_only_link: target %s\n", model.target().c_str()), 1;
  std::printf("lite_only_link: ok (target %s)\n", model.target().c_str());
  return 0;
}
