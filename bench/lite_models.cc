// The MobileNetV2 models of bench/lite_bench.py (issue 10, Benchmarks): tests/lite/
// onnx_smoke_models.h's network (fixed seeds, 1000 classes, width 1.0) at 224x224 for batch 1
// and 8, exported by the framework to Spore IR and to ONNX (opset 17):
//   lite_models DIR   ->   DIR/mobilenetv2_b{1,8}.{spore,onnx}
#include <cstdio>
#include <filesystem>
#include <string>

#include "lite/onnx_smoke_models.h"
#include "spore/error.h"
#include "spore/export.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: lite_models DIR\n");
    return 2;
  }
  using namespace spore;
  try {
    const std::filesystem::path dir = argv[1];
    std::filesystem::create_directories(dir);
    onnx_models::MobileNetV2 net(1000, 1.0, 7);
    net.set_train(false);
    for (int64_t batch : {1, 8}) {
      const Tensor x = random_normal({batch, 3, 224, 224}, 99);
      const std::string stem = (dir / ("mobilenetv2_b" + std::to_string(batch))).string();
      export_model(net, {x}, stem + ".spore");
      export_onnx(net, {x}, stem + ".onnx");
      std::printf("%s.spore, %s.onnx\n", stem.c_str(), stem.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "lite_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
