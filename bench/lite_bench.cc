// Timing of Spore Lite for bench/lite_bench.py, which runs ONNX Runtime on the same files and
// interleaves the two (issue 10, Benchmarks). It links the Lite runtime alone (spore_lite,
// spore_format, spore_core), as an application would. Modes:
//   lite_bench serve MODEL THREADS
//       Builds MODEL once, then reads a count N per line on stdin and answers one line:
//       N pairs "wall_us cpu_us" of N predictions (process CPU time, all threads). The model's
//       inputs are filled with fixed pseudo-random values of its declared shapes.
//   lite_bench startup MODEL THREADS
//       build_from_file through the first prediction, once: "wall_us cpu_us".
//   lite_bench run MODEL THREADS IN.f32... --out OUT.f32
//       One prediction of the given inputs (raw float32, in the model's input shapes), output 0
//       written raw as float32 (the script compares it with ONNX Runtime's, so a fast wrong
//       answer cannot pass as a benchmark row).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <fstream>

#include "spore/error.h"
#include "spore/lite.h"

namespace {

using namespace spore;

double cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
double wall_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

lite::Context context_of(const char* threads) {
  lite::Context ctx;
  ctx.num_threads = std::atoi(threads);
  return ctx;
}

// Fixed pseudo-random inputs in [-1, 1) of each input's declared shape (symbolic extents: 1).
std::vector<Tensor> inputs_for(const lite::Model& m) {
  std::vector<Tensor> out;
  uint32_t state = 12345;
  for (const lite::TensorInfo& t : m.inputs()) {
    std::vector<int64_t> shape;
    int64_t n = 1;
    for (int64_t e : t.shape) {
      shape.push_back(e < 0 ? 1 : e);
      n *= shape.back();
    }
    std::vector<float> v((size_t)n);
    for (float& x : v) {
      state = state * 1664525u + 1013904223u;
      x = (float)((state >> 8) * (1.0 / 8388608.0) - 1.0);
    }
    out.push_back(Tensor::from_vector(v, Shape(shape)).to(t.dtype));
  }
  return out;
}

int serve(const char* path, const char* threads) {
  lite::Model m = lite::Model::build_from_file(path, lite::ModelType::kAuto, context_of(threads));
  const std::vector<Tensor> in = inputs_for(m);
  m.predict(in);  // warm: plans, primitive caches, thread pool
  std::printf("ready\n");
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
    const int n = std::atoi(line.c_str());
    if (n <= 0) break;
    std::string reply;
    for (int i = 0; i < n; ++i) {
      const double w0 = wall_us(), c0 = cpu_us();
      m.predict(in);
      const double c1 = cpu_us(), w1 = wall_us();
      reply += std::to_string(w1 - w0) + " " + std::to_string(c1 - c0) + (i + 1 < n ? " " : "");
    }
    std::printf("%s\n", reply.c_str());
    std::fflush(stdout);
  }
  return 0;
}

int startup(const char* path, const char* threads) {
  const double w0 = wall_us(), c0 = cpu_us();
  lite::Model m = lite::Model::build_from_file(path, lite::ModelType::kAuto, context_of(threads));
  m.predict(inputs_for(m));
  const double c1 = cpu_us(), w1 = wall_us();
  std::printf("%f %f\n", w1 - w0, c1 - c0);
  return 0;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIO, "cannot open " + path);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

int run(int argc, char** argv) {
  lite::Model m = lite::Model::build_from_file(argv[2], lite::ModelType::kAuto, context_of(argv[3]));
  std::vector<Tensor> in = inputs_for(m);
  std::string out;
  size_t k = 0;
  for (int i = 4; i < argc; ++i) {
    if (std::strcmp(argv[i], "--out") == 0 && i + 1 < argc) {
      out = argv[++i];
      continue;
    }
    if (k >= in.size()) throw Error(ErrorCode::kValue, "more input files than the model has inputs");
    const std::vector<char> bytes = read_file(argv[i]);
    const Tensor t = in[k].to(DType::kFloat32);
    if ((int64_t)bytes.size() != (int64_t)t.nbytes())
      throw Error(ErrorCode::kValue, std::string(argv[i]) + " holds " + std::to_string(bytes.size()) + " bytes; input " +
                                         std::to_string(k) + " " + t.shape().str() + " needs " + std::to_string(t.nbytes()));
    in[k] = Tensor::from_bytes(bytes.data(), t.shape(), DType::kFloat32, Device::cpu()).to(in[k].dtype());
    ++k;
  }
  const std::vector<Tensor> y = m.predict(in);
  if (!out.empty()) {
    const Tensor t = y[0].to(Device::cpu()).to(DType::kFloat32).contiguous();
    std::ofstream(out, std::ios::binary).write(static_cast<const char*>(t.data_ptr()), t.nbytes());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "serve" && argc == 4) return serve(argv[2], argv[3]);
    if (mode == "startup" && argc == 4) return startup(argv[2], argv[3]);
    if (mode == "run" && argc >= 4) return run(argc, argv);
  } catch (const spore::Error& e) {
    std::fprintf(stderr, "lite_bench: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr,
               "usage: lite_bench serve MODEL THREADS | startup MODEL THREADS |\n"
               "       run MODEL THREADS IN.f32... --out OUT.f32   (bench/lite_bench.py drives it)\n");
  return 2;
}
