// Sample 06_checkpoint_ir (chapter 5.9): checkpoint and IR bytes and SHA-256, reload max abs error
// 0.0. A fixed-seed network Dense(4->8) -> BatchNorm1d -> ReLU -> Dense(8->3), put through two
// training-mode passes so that its BatchNorm moving statistics are no longer their initial values:
//   * the checkpoint half: saved with save_checkpoint, the file's bytes and SHA-256 recorded, a
//     fresh network built with other seeds loaded from it (load_checkpoint, load_param_into_net)
//     must give exactly the same outputs (max abs error 0.0);
//   * the IR half: the network exported (export_model: traced, optimised, written as Spore IR
//     with its parameters), the file's bytes and SHA-256 recorded, and the file run in the
//     separate Lite runtime on the same input must give the framework's output with max abs
//     error 0.0 for float32.
#include <cmath>
#include <filesystem>

#include "spore/export.h"
#include "spore/io.h"
#include "spore/lite.h"
#include "spore/nn/activation.h"
#include "spore/nn/dense.h"
#include "spore/nn/normalization.h"
#include "spore/probe.h"

namespace {
using namespace spore;

std::shared_ptr<nn::SequentialCell> make_net(uint64_t seed) {
  return std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{
      std::make_shared<nn::Dense>(4, 8, true, nullptr, seed), std::make_shared<nn::BatchNorm1d>(8),
      std::make_shared<nn::ReLU>(), std::make_shared<nn::Dense>(8, 3, true, nullptr, seed + 1)});
}

double max_abs_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::abs(a[i] - b[i]);
    m = std::max(m, std::isnan(d) ? INFINITY : d);
  }
  return m;
}

void sample(probe::ProbeContext& ctx) {
  const Device dev = ctx.device();
  auto input = [&](std::vector<float> v) {
    return Tensor::from_vector(v, Shape{(int64_t)v.size() / 4, 4}).to(dev);
  };
  Tensor x =
      input({0.5f, -1.0f, 2.0f,  0.25f, -0.75f, 1.5f, 0.0f,  -2.0f, 1.0f, 1.0f,  -1.0f,  0.5f,
             0.1f, 0.2f,  -0.3f, 0.4f,  -1.5f,  0.0f, 0.75f, 1.25f, 2.0f, -0.5f, -0.25f, 0.0f});

  auto net = make_net(61);
  net->set_train(true);
  (*net)(x);
  (*net)(input({1, 2, 3, 4, -1, -2, -3, -4, 0.5f, 0.5f, 0.5f, 0.5f}));
  net->set_train(false);
  const std::vector<double> want = probe::host_values((*net)(x));

  // One file per device, replaced atomically on every run; its bytes are the same every run
  // (fixed seeds, no time stamps in the metadata), so its SHA-256 is comparable across runs.
  std::string dev_name = dev.str();
  for (char& c : dev_name)
    if (c == ':') c = '-';
  const auto path = std::filesystem::path(probe::artifact_dir()) / ("06_checkpoint_ir-" + dev_name + ".safetensors");
  save_checkpoint(*net, path, {{"sample", "06_checkpoint_ir"}});
  ctx.artifact("checkpoint", path.string());

  auto fresh = make_net(71);
  fresh->set_train(false);
  const double before = max_abs_error(probe::host_values((*fresh)(x)), want);
  ctx.value("max_abs_error_before_load", before);
  if (!(before > 0))
    ctx.fail(
        "the fresh network already matched the saved one before loading: the reload proves "
        "nothing");

  Checkpoint ckpt = load_checkpoint(path);
  LoadReport report = load_param_into_net(*fresh, ckpt);  // strict: every parameter, nothing extra
  ctx.value("checkpoint_tensors", (int64_t)ckpt.tensors.size());
  ctx.value("checkpoint_format_version", ckpt.format_version());
  ctx.value("checkpoint_framework_version", ckpt.metadata["framework_version"]);
  ctx.value("missing_keys", (int64_t)report.missing_keys.size());
  ctx.value("unexpected_keys", (int64_t)report.unexpected_keys.size());

  Tensor got = (*fresh)(x);
  ctx.alignment("checkpoint", max_abs_error(probe::host_values(got), want), 0.0);
  ctx.compare("reloaded output, bit-exact", got, want, 0.0, 0.0);

  // The IR half: the framework's network as a file, run by Lite (a runtime of its own).
  const auto ir_path = std::filesystem::path(probe::artifact_dir()) / ("06_checkpoint_ir-" + dev_name + ".spore");
  export_model(*net, {x}, ir_path, ExportOptions().meta("sample", "06_checkpoint_ir"));
  ctx.artifact("ir", ir_path.string());
  const ir::Model model_ir = ir::read_model(ir_path);
  ctx.value("ir_version", (int64_t)model_ir.ir_version);
  ctx.value("ir_nodes", (int64_t)model_ir.graph.nodes.size());
  lite::Model lite_model = lite::Model::build_from_file(ir_path, lite::ModelType::kSpore, lite::Context{{dev.str()}, 0});
  const std::vector<double> lite_out = probe::host_values(lite_model.predict({x})[0]);
  ctx.alignment("ir", max_abs_error(lite_out, want), 0.0);
  ctx.compare_values("Lite output of the IR file, bit-exact", lite_out, want, 0.0, 0.0, lite_model.target());
}
}  // namespace

SPORE_REGISTER_PROBE({"06_checkpoint_ir", "sample",
                      "checkpoint and IR bytes and SHA-256, reload max abs error 0.0", "",
                      &sample});
