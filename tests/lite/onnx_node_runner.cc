// The ONNX node-test runner (NOTE [ONNX]): runs ONNX backend node-test cases written out by
// tools/onnx_node_tests.py in Spore Lite and prints one line per case:
//   NAME <tab> STATUS <tab> DETAIL
// STATUS: pass; fail (wrong numbers, shape or dtype); unmapped (an op Spore does not map: not
// counted as mapped); refused (every op is mapped but the importer refuses an attribute, dtype or
// version); error (any other error). A case folder holds model.onnx, input_<k>.npy (in the order
// of the graph's inputs), output_<k>.npy and tolerance.txt ("rtol atol"); an empty
// input_<k>.bfloat16 or output_<k>.bfloat16 marks an array written as float32 that is bfloat16
// (.npy cannot name it); types Spore carries in a wider dtype are written in it (NOTE [ONNX
// carried types]).
//
//   onnx_node_runner DIR [--require-pass]   (exit 1 when --require-pass and any case is not pass)
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "spore/data.h"
#include "spore/error.h"
#include "spore/lite.h"
#include "spore/onnx.h"
#include "spore/ops.h"

namespace fs = std::filesystem;
using namespace spore;

namespace {

std::string unmapped_ops(const fs::path& model_path) {
  std::ifstream f(model_path, std::ios::binary);
  ::onnx::ModelProto m;
  if (!m.ParseFromIstream(&f)) return "";
  std::string out;
  for (const auto& n : m.graph().node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    const std::string key = default_domain ? n.op_type() : n.domain() + "/" + n.op_type();
    if (!spore::onnx::onnx_op_mapped(key) && out.find(n.op_type()) == std::string::npos)
      out += (out.empty() ? "" : ",") + n.op_type();
  }
  return out;
}

// |got - want| <= atol + rtol |want|, NaN where NaN; "" when equal within the tolerance. As ONNX's
// own backend runner compares (onnx.backend.test.runner's assert_similar_outputs), a bfloat16
// output takes rtol = max(rtol, 2^-6), two bfloat16 steps: the cases' rtol of 1e-3 is below one
// (2^-8 relative), so it would demand the reference's exact rounding sequence.
std::string compare(const Tensor& got_in, const Tensor& want_in, double rtol, double atol) {
  if (got_in.dtype() != want_in.dtype())
    return std::string("dtype ") + dtype_name(got_in.dtype()) + ", expected " + dtype_name(want_in.dtype());
  if (want_in.dtype() == DType::kBFloat16) rtol = std::max(rtol, std::ldexp(1.0, -6));
  if (got_in.shape() != want_in.shape()) return "shape " + got_in.shape().str() + ", expected " + want_in.shape().str();
  const auto got = got_in.contiguous().to(DType::kFloat64).to_vector<double>();
  const auto want = want_in.contiguous().to(DType::kFloat64).to_vector<double>();
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    if (want[i] == got[i]) continue;  // equal infinities too
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= atol + rtol * std::fabs(want[i])) && (std::isnan(err) || err >= worst)) {
      worst = std::isnan(err) ? INFINITY : err;
      at = i + 1;
    }
  }
  if (!at) return "";
  char text[96];
  std::snprintf(text, sizeof text, "element %zu: %.7g vs %.7g", at - 1, got[at - 1], want[at - 1]);
  return text;
}

// A case's array: its .npy, cast to bfloat16 (exactly) when marked so.
Tensor load_array(const fs::path& dir, const std::string& stem) {
  Tensor t = data::load_npy((dir / (stem + ".npy")).string());
  return fs::exists(dir / (stem + ".bfloat16")) ? t.to(DType::kBFloat16) : t;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\t') c = ' ';
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: onnx_node_runner DIR [--require-pass]\n");
    return 2;
  }
  const bool require = argc > 2 && std::string(argv[2]) == "--require-pass";
  std::vector<fs::path> cases;
  for (const auto& e : fs::directory_iterator(argv[1]))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  int pass = 0, total = 0, mapped = 0;
  for (const fs::path& dir : cases) {
    ++total;
    const std::string name = dir.filename().string();
    std::string status = "pass", detail;
    const std::string unmapped = unmapped_ops(dir / "model.onnx");
    if (!unmapped.empty()) {
      std::printf("%s\tunmapped\t%s\n", name.c_str(), unmapped.c_str());
      continue;
    }
    ++mapped;
    try {
      double rtol = 1e-3, atol = 1e-7;
      if (std::ifstream t(dir / "tolerance.txt"); t) t >> rtol >> atol;
      lite::Model model = lite::Model::build_from_file(dir / "model.onnx", lite::ModelType::kONNX, lite::Context{{"cpu"}, 1});
      std::vector<Tensor> inputs;
      for (size_t k = 0; k < model.inputs().size(); ++k) inputs.push_back(load_array(dir, "input_" + std::to_string(k)));
      const std::vector<Tensor> outs = model.predict(inputs);
      for (size_t k = 0; k < outs.size() && status == "pass"; ++k) {
        const fs::path want = dir / ("output_" + std::to_string(k) + ".npy");
        if (!fs::exists(want)) {
          status = "fail", detail = "the model makes more outputs than the case expects";
          break;
        }
        std::string why = compare(outs[k], load_array(dir, "output_" + std::to_string(k)), rtol, atol);
        if (!why.empty()) status = "fail", detail = "output " + std::to_string(k) + ": " + why;
      }
    } catch (const Error& e) {
      status = e.code() == ErrorCode::kUnsupported || e.code() == ErrorCode::kVersion ? "refused" : "error";
      detail = e.what();
    } catch (const std::exception& e) {
      status = "error", detail = e.what();
    }
    if (status == "pass") ++pass;
    std::printf("%s\t%s\t%s\n", name.c_str(), status.c_str(), one_line(detail).c_str());
  }
  std::fprintf(stderr, "onnx_node_runner: %d cases, %d mapped, %d passed\n", total, mapped, pass);
  return require && pass != total ? 1 : 0;
}
