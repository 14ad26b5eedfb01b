// Real ONNX models as PyPI wheels ship them (silero-vad's voice-activity models, openWakeWord's
// audio front end and classifiers, RapidOCR's orientation classifier): Lite's outputs against ONNX
// Runtime's on realistic inputs. tools/onnx_wheel_corpus.py pins the wheels (versions and SHA-256s)
// and wrote tests/fixtures/onnx/corpus/<model>/ (inputs, ONNX Runtime's outputs, model.json); the
// model files are too large to commit, so `python3 tools/onnx_wheel_corpus.py --fetch` (run by
// scripts/test.sh) puts them in outputs/onnx-corpus/ ($SPORE_ONNX_CORPUS_DIR overrides), and
// without them the test skips and says so. bench/onnx_corpus.md times the whole corpus.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "spore/data.h"
#include "spore/lite.h"

namespace spore::test {
namespace {

namespace fs = std::filesystem;
const fs::path kReferences = fs::path(SPORE_SOURCE_DIR) / "tests" / "fixtures" / "onnx" / "corpus";

fs::path models_dir() {
  if (const char* d = std::getenv("SPORE_ONNX_CORPUS_DIR")) return d;
  return fs::path(SPORE_SOURCE_DIR) / "outputs" / "onnx-corpus";
}

// max |got - want| / max |want|: these models sum long products (convolutions over a whole
// spectrogram, LSTM steps), so an element near zero is held to the output's scale, not its own.
double scaled_error(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  if (got.shape() != want.shape()) return INFINITY;
  const auto g = got.contiguous().to(DType::kFloat64).to_vector<double>();
  const auto w = want.contiguous().to(DType::kFloat64).to_vector<double>();
  double diff = 0, scale = 1e-6;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::fabs(g[i] - w[i]));
    scale = std::max(scale, std::fabs(w[i]));
  }
  return diff / scale;
}

TEST(OnnxCorpus, ShippedModelsMatchOnnxRuntime) {
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(kReferences))
    if (fs::exists(e.path() / "model.json")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  ASSERT_GE(cases.size(), 10u);
  int ran = 0;
  std::string missing;
  for (const fs::path& d : cases) {
    SCOPED_TRACE(d.filename().string());
    const nlohmann::json meta = nlohmann::json::parse(std::ifstream(d / "model.json"));
    const fs::path file = models_dir() / meta["file"].get<std::string>();
    if (!fs::exists(file)) {
      missing += " " + file.filename().string();
      continue;
    }
    lite::Model model = lite::Model::build_from_file(file, lite::ModelType::kONNX, lite::Context{{"cpu"}, 1});
    std::map<std::string, Tensor> inputs;
    const auto names = meta["inputs"].get<std::vector<std::string>>();
    for (size_t k = 0; k < names.size(); ++k)
      inputs[names[k]] = data::load_npy((d / ("input_" + std::to_string(k) + ".npy")).string());
    const std::vector<Tensor> outs = model.predict(inputs);
    // Float models agree to 1e-4 of each output's scale; a model that quantizes its activations
    // at run time (ddddocr_int8's DynamicQuantizeLSTM) may round one activation to the next
    // 8-bit step where a float sum differs in its last bit, so its model.json allows more.
    const double tolerance = meta.value("tolerance", 1e-4);
    for (size_t k = 0; k < outs.size(); ++k) {
      const fs::path want = d / ("output_" + std::to_string(k) + ".npy");
      ASSERT_TRUE(fs::exists(want)) << want;
      EXPECT_LT(scaled_error(outs[k], data::load_npy(want.string())), tolerance) << "output " << k;
    }
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "the corpus models are not in " << models_dir() << ":" << missing
                             << "; run `python3 tools/onnx_wheel_corpus.py --fetch`";
  EXPECT_EQ(missing, "") << "some corpus models are missing; run `python3 tools/onnx_wheel_corpus.py --fetch`";
}

}  // namespace
}  // namespace spore::test
