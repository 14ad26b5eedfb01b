// Writes the ONNX export fixtures' models and inputs (NOTE [ONNX]): for each network of
// tests/lite/onnx_test_models.h, DIR/<name>/model.onnx and input_<k>.npy. Then
// tools/onnx_check.py runs them in ONNX Runtime and writes ort_output_<k>.npy beside them.
//   build/release/tests/onnx_export_models tests/fixtures/onnx/export
#include <cstdio>
#include <filesystem>

#include "onnx_test_models.h"
#include "spore/data.h"
#include "spore/error.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: onnx_export_models DIR\n");
    return 2;
  }
  namespace fs = std::filesystem;
  try {
    for (const auto& c : spore::onnx_models::export_cases()) {
      const fs::path dir = fs::path(argv[1]) / c.name;
      fs::create_directories(dir);
      spore::export_onnx(c.fn, c.inputs, dir / "model.onnx", c.options);
      for (size_t k = 0; k < c.inputs.size(); ++k)
        spore::data::save_npy((dir / ("input_" + std::to_string(k) + ".npy")).string(), c.inputs[k]);
      std::printf("%s: %ju bytes%s\n", (dir / "model.onnx").c_str(), (uintmax_t)fs::file_size(dir / "model.onnx"),
                  c.small ? "" : " (not committed: delete it after tools/onnx_check.py; the test exports it again)");
    }
  } catch (const spore::Error& e) {
    std::fprintf(stderr, "onnx_export_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
