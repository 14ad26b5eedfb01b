// spore lite run FILE --input NAME=FILE.npy ... --output DIR: runs a model in Lite from the
// command line, times it, and writes each output as .npy (NOTE [Lite runtime]). Output names come
// from the model file, so each becomes a file name through unique_safe_file_names (NOTE [Safe file
// names]): an ordinary name "y" is DIR/y.npy, and no name can put a file outside DIR.
// spore lite quantize IN.onnx --out OUT.onnx [--format dynamic|qdq] [--no-conv]: int8 quantization of
// the MatMul, Gemm and Conv weights (NOTE [Dynamic int8 products]).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "spore/data.h"
#include "spore/error.h"
#include "spore/lite.h"
#include "spore/lite_quantize.h"
#include "spore/ops.h"
#include "spore/safe_file_name.h"

namespace spore::cli {
namespace {

struct LiteRunOptions {
  std::string file, output, targets = "cpu";
  std::vector<std::string> inputs;
  int repeat = 10, threads = 0;
  bool zeros = false;
};

// A name from the model as printed: control characters, quotes and backslashes escaped, and the
// whole in quotes when anything was (or it is empty or has spaces), so a name cannot drive the
// terminal or pass for another.
std::string shown_name(const std::string& name) {
  std::string out;
  bool quote = name.empty();
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
      quote = true;
    } else if (c == '"' || c == '\\') {
      out += '\\';
      out += (char)c;
      quote = true;
    } else {
      if (c == ' ') quote = true;
      out += (char)c;
    }
  }
  return quote ? '"' + out + '"' : out;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t next = s.find(',', at);
    if (next == std::string::npos) next = s.size();
    if (next > at) out.push_back(s.substr(at, next - at));
    at = next + 1;
  }
  return out;
}

int run(const LiteRunOptions& o) {
  lite::Context ctx{split_commas(o.targets), o.threads};
  auto t0 = std::chrono::steady_clock::now();
  lite::Model model = lite::Model::build_from_file(o.file, lite::ModelType::kAuto, ctx);
  const double build_ms = ms_since(t0);
  std::map<std::string, Tensor> given;
  for (const std::string& spec : o.inputs) {
    const size_t eq = spec.find('=');
    std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
    const std::string path = eq == std::string::npos ? spec : spec.substr(eq + 1);
    if (name.empty()) {
      if (model.inputs().size() != 1)
        throw Error(ErrorCode::kValue, "--input " + spec + ": the model has " + std::to_string(model.inputs().size()) +
                                           " inputs; name each as NAME=FILE.npy");
      name = model.inputs()[0].name;
    }
    given[name] = data::load_npy(path);
  }
  std::vector<Tensor> inputs;
  for (const lite::TensorInfo& t : model.inputs()) {
    auto it = given.find(t.name);
    if (it != given.end()) {
      // An integer array into a wider integer input is widened: every value is kept (a model's
      // uint16 input is carried as int64, NOTE [ONNX carried types]; a '<u2' file loads as int32).
      const DType have = it->second.dtype();
      const bool widening = is_integral(have) && is_integral(t.dtype) && dtype_size(t.dtype) > dtype_size(have);
      inputs.push_back(widening ? it->second.to(t.dtype) : it->second);
      continue;
    }
    bool fixed = std::all_of(t.shape.begin(), t.shape.end(), [](int64_t e) { return e >= 0; });
    if (!o.zeros || !fixed)
      throw Error(ErrorCode::kValue, "no --input for " + t.str() + (fixed ? " (or pass --zeros to time the model on zeros)" : ""));
    inputs.push_back(zeros(t.shape, t.dtype));
  }
  t0 = std::chrono::steady_clock::now();
  std::vector<Tensor> outputs = model.predict(inputs);
  const double first_ms = ms_since(t0);
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    t0 = std::chrono::steady_clock::now();
    outputs = model.predict(inputs);
    times.push_back(ms_since(t0));
  }
  std::printf("model   %s\ntarget  %s", o.file.c_str(), model.target().c_str());
  for (const auto& s : model.skipped_targets()) std::printf("  (skipped %s)", s.c_str());
  std::printf("\n");
  // A name from the model as printed (shown_name), then its dtype and shape.
  auto described = [](const lite::TensorInfo& info) { return shown_name(info.name) + info.str().substr(info.name.size()); };
  for (size_t i = 0; i < inputs.size(); ++i)
    std::printf("input   %-30s given %s\n", described(model.inputs()[i]).c_str(), inputs[i].shape().str().c_str());
  if (!o.output.empty()) std::filesystem::create_directories(o.output);
  std::vector<std::string> stems;  // unnamed outputs (and internal "%" names) are output<i>
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& name = model.outputs()[i].name;
    stems.push_back(name.empty() || name[0] == '%' ? std::string() : name);
  }
  const std::vector<std::string> files = unique_safe_file_names(stems, "output");
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::printf("output  %-30s %s", described(model.outputs()[i]).c_str(), outputs[i].shape().str().c_str());
    if (!o.output.empty()) {
      const std::string path = (std::filesystem::path(o.output) / (files[i] + ".npy")).string();
      Tensor out = outputs[i].dtype() == DType::kBFloat16 ? outputs[i].to(DType::kFloat32) : outputs[i];
      // A carried output (NOTE [ONNX carried types]) goes back to its file type where .npy has one;
      // the sub-byte and minifloat types have none, so they stay in their carrier and say so.
      const std::string& carried = model.outputs()[i].carried;
      const bool narrow = data::npy_has_narrow_type(carried);
      if (narrow) data::save_npy_narrowed(path, out.to(Device::cpu()), carried);
      else data::save_npy(path, out.to(Device::cpu()));
      std::printf("  -> %s", path.c_str());
      if (!carried.empty() && !narrow)
        std::printf(" (as %s: .npy has no %s)", dtype_name(out.dtype()), carried.c_str());
    }
    std::printf("\n");
  }
  std::printf("build   %.2f ms   first predict %.3f ms\n", build_ms, first_ms);
  if (!times.empty()) {
    std::sort(times.begin(), times.end());
    std::printf("predict median %.3f ms   min %.3f ms   p90 %.3f ms   (%d runs)\n", times[times.size() / 2], times.front(),
                times[std::min(times.size() - 1, times.size() * 9 / 10)], o.repeat);
  }
  return 0;
}

struct LiteQuantizeOptions {
  std::string in, out, format = "dynamic";
  int64_t min_elements = 0;
  bool no_conv = false;
};

std::string mib(int64_t bytes) {
  char b[32];
  if (bytes < (1 << 20)) std::snprintf(b, sizeof b, "%.1f KiB", (double)bytes / 1024);
  else std::snprintf(b, sizeof b, "%.1f MiB", (double)bytes / (1 << 20));
  return b;
}

int quantize(const LiteQuantizeOptions& o) {
  lite::QuantizeOptions q;
  q.min_elements = o.min_elements;
  q.format = o.format == "qdq" ? lite::QuantizeFormat::kQdq : lite::QuantizeFormat::kDynamic;
  q.convolutions = !o.no_conv;
  const lite::QuantizeReport r = lite::quantize_onnx(o.in, o.out, q);
  if (r.quantized == 0) {
    std::printf("no MatMul, Gemm or Conv with a float32 initializer weight was quantized: %s is written unchanged\n",
                o.out.c_str());
  } else {
    const int products = r.quantized - r.convolutions;
    std::printf("quantized %d weights to int8 (%d product%s, %d convolution%s; %s, one scale per output channel): "
                "weights %s -> %s\n",
                r.quantized, products, products == 1 ? "" : "s", r.convolutions, r.convolutions == 1 ? "" : "s",
                o.format == "qdq" ? "QDQ: DequantizeLinear before float32 ops" : "dynamic: integer sums",
                mib(r.weight_bytes_before).c_str(), mib(r.weight_bytes_after).c_str());
    std::printf("file %s -> %s: %s\n", mib(r.file_bytes_before).c_str(), mib(r.file_bytes_after).c_str(), o.out.c_str());
  }
  if (!r.skipped.empty()) {
    std::printf("left in float32 (%zu):\n", r.skipped.size());
    for (size_t i = 0; i < r.skipped.size() && i < 20; ++i)
      std::printf("  node %s (%s): %s\n", shown_name(r.skipped[i].node).c_str(), shown_name(r.skipped[i].op).c_str(),
                  r.skipped[i].why.c_str());
    if (r.skipped.size() > 20) std::printf("  ... and %zu more\n", r.skipped.size() - 20);
  }
  return 0;
}

}  // namespace

void add_lite_commands(CLI::App& app, Handlers& h) {
  auto* lite_cmd = add_command(app, "lite", "The Lite inference runtime", "spore lite run model.spore --input x=x.npy --output out");
  lite_cmd->require_subcommand(1);
  auto* run_cmd = add_command(*lite_cmd, "run", "Build a model in Lite, predict, time it, and write its outputs as .npy",
                              "spore lite run model.spore --input x=x.npy --output out");
  auto o = std::make_shared<LiteRunOptions>();
  run_cmd->add_option("FILE", o->file, "Model file (Spore IR, ONNX: a .onnx file, or MindSpore's MindIR: a .mindir file)")->required();
  run_cmd->add_option("--input", o->inputs, "NAME=FILE.npy, once per input (FILE.npy alone for a one-input model)");
  run_cmd->add_option("--output", o->output,
                      "Directory for the outputs (<name>.npy; a name that is not a safe file name is made one)");
  run_cmd->add_option("--repeat", o->repeat, "Timed predictions after the first")->capture_default_str();
  run_cmd->add_option("--threads", o->threads, "Threads (0: one per core)")->capture_default_str();
  run_cmd->add_option("--target", o->targets, "Targets in order of preference, comma-separated")->capture_default_str();
  run_cmd->add_flag("--zeros", o->zeros, "Fill inputs not given with zeros (timing only)");
  run_cmd->callback([&h, o] { h.action = [o] { return run(*o); }; });
  auto* quantize_cmd = add_command(*lite_cmd, "quantize",
                                   "Quantize an ONNX model's MatMul, Gemm and Conv weights to int8 (per output channel), "
                                   "as ONNX Runtime's quantize_dynamic (or its QDQ form) does",
                                   "spore lite quantize model.onnx --out model.int8.onnx");
  auto q = std::make_shared<LiteQuantizeOptions>();
  quantize_cmd->add_option("FILE", q->in, "The float32 ONNX model")->required();
  quantize_cmd->add_option("--out", q->out, "Where to write the quantized ONNX model")->required();
  quantize_cmd->add_option("--min-elements", q->min_elements, "Weights smaller than this stay float32")->capture_default_str();
  quantize_cmd
      ->add_option("--format", q->format,
                   "dynamic: integer products with activations quantized at run time; qdq: int8 weights "
                   "dequantized before float32 ops (op set 13+)")
      ->check(CLI::IsMember({"dynamic", "qdq"}))
      ->capture_default_str();
  quantize_cmd->add_flag("--no-conv", q->no_conv, "Leave Conv weights in float32");
  quantize_cmd->callback([&h, q] { h.action = [q] { return quantize(*q); }; });
}

}  // namespace spore::cli
