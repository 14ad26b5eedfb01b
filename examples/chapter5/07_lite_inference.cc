// Sample 07_lite_inference (chapter 5.10): the boundary between the framework's exporter and the
// Lite runtime, re-enacted on the CPU target and passed. On the chapter's board MindSpore Lite
// 2.2.11 refused the framework's own export ("can only support the maximum mind ir version: 1 ...
// mind ir version: 2") and left the user no way forward. Here:
//   1. the framework's newest export builds and predicts in Lite (max abs error 0.0, float32);
//   2. a file of a version newer than this Lite reads (the newest export with its version field
//      advanced, as a future exporter would write it) is refused in build_from_file, before any
//      target is touched, with a message that names both versions and the two ways out: the
//      refusal, with that message, is the check;
//   3. the same network exported down-level (IR version 1) builds and predicts (0.0 again);
//   4. the target list {"cuda", "cpu"} falls back in order and reports the target it built for;
//   5. MindSpore's own side of the boundary: the chapter's Fp16Linear(4, 1, seed=1) exported by the
//      real MindSpore 2.10 (MindIR version 3, the file MindSpore Lite 2.0 refuses) builds in Spore
//      Lite and predicts MindSpore's output (tests/fixtures/mindir, NOTE [MindIR]); a MindIR
//      version 4 file is refused with MindSpore Lite's sentence and the ways out.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "spore/error.h"
#include "spore/export.h"
#include "spore/format.h"
#include "spore/data.h"
#include "spore/ir.h"
#include "spore/lite.h"
#include "spore/nn/activation.h"
#include "spore/nn/dense.h"
#include "spore/probe.h"

namespace {
using namespace spore;

double max_abs_error(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size() || a.empty()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::isnan(a[i] - b[i]) ? INFINITY : std::abs(a[i] - b[i]));
  return m;
}

void sample(probe::ProbeContext& ctx) {
  const Device dev = ctx.device();
  nn::SequentialCell net({std::make_shared<nn::Dense>(4, 6, true, nullptr, 7), std::make_shared<nn::ReLU>(),
                          std::make_shared<nn::Dense>(6, 2, true, nullptr, 8)});
  const Tensor x = Tensor::from_vector<float>({0.5f, -1, 2, 0.25f, -0.75f, 1.5f, 0, -2, 1, 1, -1, 0.5f}, Shape{3, 4}).to(dev);
  const std::vector<double> want = probe::host_values(net(x));
  const std::filesystem::path dir = probe::artifact_dir();
  const lite::Context context{{"cuda", dev.str()}, 0};

  // 1. The newest export, in Lite.
  const auto newest = dir / "07_lite_inference-newest.spore";
  export_model(net, {x}, newest);
  ctx.artifact("ir_newest", newest.string());
  lite::Model model = lite::Model::build_from_file(newest, lite::ModelType::kSpore, context);
  const std::vector<double> got = probe::host_values(model.predict({x})[0]);
  ctx.alignment("ir_newest", max_abs_error(got, want), 0.0);
  ctx.compare_values("newest IR in Lite", got, want, 0.0, 0.0, model.target());
  ctx.value("ir_version_newest", (int64_t)ir::peek_version(newest));
  // 4. The target list fell back in order, and says so.
  ctx.value("lite_target", model.target());
  std::string skipped;
  for (const auto& s : model.skipped_targets()) skipped += (skipped.empty() ? "" : "; ") + s;
  ctx.value("lite_skipped_targets", skipped);

  // 2. A file newer than this Lite reads: refused first, with the way out.
  std::vector<uint8_t> bytes = read_file_bytes(newest);
  const uint32_t future = ir::kNewestVersion + 1;
  std::memcpy(bytes.data() + 8, &future, 4);
  const auto too_new = dir / "07_lite_inference-future.spore";
  std::ofstream(too_new, std::ios::binary).write((const char*)bytes.data(), (std::streamsize)bytes.size());
  try {
    lite::Model::build_from_file(too_new, lite::ModelType::kSpore, lite::Context{{"no-such-target"}, 0});
    ctx.fail("Lite built a file of IR version " + std::to_string(future) + ", which it cannot read");
  } catch (const Error& e) {
    const std::string msg = e.what();
    ctx.value("refusal_message", msg);
    const std::string need[] = {"IR version " + std::to_string(future), "reads versions " + std::to_string(ir::kOldestVersion) +
                                    " to " + std::to_string(ir::kNewestVersion), "spore ir convert", "--ir-version"};
    if (e.code() != ErrorCode::kVersion) ctx.fail("the too-new file was refused as something else: " + msg);
    for (const auto& n : need)
      if (msg.find(n) == std::string::npos) ctx.fail("the refusal does not say '" + n + "': " + msg);
  }

  // 3. The same network, down-level: builds and predicts.
  const auto v1 = dir / "07_lite_inference-v1.spore";
  export_model(net, {x}, v1, ExportOptions().version(1));
  ctx.artifact("ir_v1", v1.string());
  ctx.value("ir_version_down_level", (int64_t)ir::peek_version(v1));
  lite::Model old = lite::Model::build_from_file(v1, lite::ModelType::kSpore, context);
  const std::vector<double> got_v1 = probe::host_values(old.predict({x})[0]);
  ctx.alignment("ir_v1", max_abs_error(got_v1, want), 0.0);
  ctx.compare_values("IR version 1 in Lite", got_v1, want, 0.0, 0.0, old.target());

  // 5. MindSpore 2.10's own export of the chapter's Fp16Linear, with MindSpore's input and output.
  const std::filesystem::path ms_dir = SPORE_MINDIR_FIXTURES;
  const auto mindir = ms_dir / "fp16_linear.mindir";
  if (!std::filesystem::exists(mindir)) {
    ctx.value("mindspore_mindir", "not checked: " + mindir.string() + " is absent (a build outside the source tree)");
    return;
  }
  ctx.artifact("mindspore_2.10_mindir_v3", mindir.string());
  lite::Model ms_model = lite::Model::build_from_file(mindir, lite::ModelType::kMindIR, context);
  const Tensor ms_x = data::load_npy((ms_dir / "fp16_linear.in0.npy").string()).to(dev);
  const std::vector<double> ms_want = probe::host_values(data::load_npy((ms_dir / "fp16_linear.out0.npy").string()));
  const std::vector<double> ms_got = probe::host_values(ms_model.predict({ms_x})[0]);
  ctx.alignment("mindspore_2.10_mindir_v3", max_abs_error(ms_got, ms_want), 1e-6);
  ctx.compare_values("MindSpore 2.10's MindIR (version 3) in Lite", ms_got, ms_want, 1e-6, 0.0, ms_model.target());
  try {
    lite::Model::build_from_file(ms_dir / "fp16_linear.v4.mindir", lite::ModelType::kMindIR, lite::Context{{"no-such-target"}, 0});
    ctx.fail("Lite built a MindIR file of version 4, which it cannot read");
  } catch (const Error& e) {
    const std::string msg = e.what();
    ctx.value("mindir_refusal_message", msg);
    if (e.code() != ErrorCode::kVersion || msg.find("maximum mind ir version: 3") == std::string::npos ||
        msg.find("Ways out") == std::string::npos)
      ctx.fail("the MindIR version 4 file was not refused with the version and the ways out: " + msg);
  }
}
}  // namespace

SPORE_REGISTER_PROBE({"07_lite_inference", "sample",
                      "the exporter/Lite version boundary: newest and down-level files run, a too-new file is refused with the way out, "
                      "MindSpore 2.10's own MindIR v3 runs",
                      "", &sample});
