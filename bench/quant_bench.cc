// matmul_q matrix-vector (decode) speed at Qwen2.5-0.5B's shapes, as GB/s of weights read and as
// a fraction of the read bandwidth this program measures in the same run (the roofline of a
// decode step, which reads every weight once). 1 and 2 threads; every weight type.
//   quant_bench [rounds [type]]    (default 5 rounds, every type; medians of interleaved rounds)
// Shapes (k -> n): 896 -> 4864 (gate / up), 4864 -> 896 (down), 896 -> 151936 (LM head).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_features.h"
#include "backends/cpu/thread_pool.h"
#include "spore/context.h"
#include "spore/half.h"
#include "spore/llm.h"
#include "spore/quant.h"

namespace spore {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Read bandwidth: sums a 512 MiB buffer (far past the caches) on the pool's threads.
struct ReadProbe {
  std::vector<uint64_t> buf = std::vector<uint64_t>((size_t)64 << 20, 1);
  double run() {
    const auto t0 = Clock::now();
    std::vector<uint64_t> part(64, 0);
    const int64_t n = (int64_t)buf.size();
    cpu::parallel_for(n, n / 64, [&](int64_t b, int64_t e) {
      uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (int64_t i = b; i + 4 <= e; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
      part[(size_t)(b * 64 / n)] = s0 + s1 + s2 + s3;
    });
    volatile uint64_t sink = 0;
    for (uint64_t p : part) sink = sink + p;
    return (double)buf.size() * 8 / seconds_since(t0) / 1e9;
  }
};

Tensor make_weight(const std::string& type, int64_t n, int64_t k) {
  const GgmlType t = *parse_quant_type(type);
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  if (t == GgmlType::kF16 || t == GgmlType::kBF16) {
    std::vector<uint16_t> w((size_t)(n * k));
    for (auto& v : w) v = t == GgmlType::kF16 ? float_to_half_bits(dist(gen)) : float_to_bf16_bits(dist(gen));
    return Tensor::from_bytes(w.data(), Shape{n, k}, t == GgmlType::kF16 ? DType::kFloat16 : DType::kBFloat16,
                              Device::cpu());
  }
  const size_t rb = quant_row_bytes(t, k);
  std::vector<uint8_t> w(rb * (size_t)n);
  if (t == GgmlType::kQ5_K || t == GgmlType::kQ6_K) {  // read-only types: random bits, sane scales
    for (auto& b : w) b = (uint8_t)gen();
    const QuantTraits& f = quant_traits(t);
    const uint16_t d = float_to_half_bits(0.01f);
    for (size_t b = 0; b < w.size(); b += f.block_bytes) std::memcpy(w.data() + b + (t == GgmlType::kQ6_K ? 208 : 0), &d, 2);
  } else {
    std::vector<float> row((size_t)k);
    for (int64_t r = 0; r < n; ++r) {
      for (auto& v : row) v = dist(gen);
      quantize_row(t, row, std::span<uint8_t>(w.data() + r * rb, rb));
    }
  }
  return Tensor::from_bytes(w.data(), Shape{n, (int64_t)rb}, DType::kUInt8, Device::cpu());
}

struct Row {
  std::string type, shape;
  int threads;
  double gbps, bw;
};

}  // namespace
}  // namespace spore

int main(int argc, char** argv) {
  using namespace spore;
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<std::string> types{"f16", "bf16", "q8_0", "q4_0", "q4_1", "q4_k", "q5_k", "q6_k"};
  if (argc > 2) types = {argv[2]};  // one type only
  const std::vector<std::pair<int64_t, int64_t>> shapes{{896, 4864}, {4864, 896}, {896, 151936}};
  std::printf("# matmul_q matvec, SIMD level %s, %d rounds (medians)\n", cpu::simd_level_name(cpu::simd_level()),
              rounds);
  ReadProbe probe;
  std::vector<Row> rows;
  for (const std::string& type : types) {
    for (auto [k, n] : shapes) {
      const QuantTraits& f = quant_traits(*parse_quant_type(type));
      if (k % f.block_size != 0) {  // GGUF converters fall back to another type for such tensors
        std::printf("%-5s %lldx%lld: n/a (k is not a multiple of %d)\n", type.c_str(), (long long)k, (long long)n,
                    f.block_size);
        rows.push_back({type, std::to_string(k) + "x" + std::to_string(n), 1, 0, 0});
        rows.push_back({type, std::to_string(k) + "x" + std::to_string(n), 2, 0, 0});
        continue;
      }
      // Copies enough to overflow the caches, read in turn, so every call streams from memory.
      const Tensor w0 = make_weight(type, n, k);
      const double one = (double)w0.numel() * (double)dtype_size(w0.dtype());
      std::vector<Tensor> copies{w0};
      while ((double)copies.size() * one < 256e6) copies.push_back(w0.clone());
      std::vector<float> xv((size_t)k);
      for (int64_t i = 0; i < k; ++i) xv[(size_t)i] = (float)std::sin(0.37 * (double)i);
      const Tensor x = Tensor::from_vector(xv, Shape{1, k});
      const double bytes = one;
      for (int threads : {1, 2}) {
        set_num_threads(threads);
        for (const Tensor& w : copies) matmul_q(x, w, type);  // warm-up (and page-in)
        std::vector<double> speed, bw;
        for (int r = 0; r < rounds; ++r) {  // interleaved: bandwidth, then the kernel, each round
          bw.push_back(probe.run());
          const int reps = std::max((int)copies.size(), (int)(4e8 / bytes));
          const auto t0 = Clock::now();
          for (int i = 0; i < reps; ++i) matmul_q(x, copies[(size_t)i % copies.size()], type);
          speed.push_back(bytes * reps / seconds_since(t0) / 1e9);
        }
        rows.push_back({type, std::to_string(k) + "x" + std::to_string(n), threads, median(speed), median(bw)});
        const Row& row = rows.back();
        std::printf("%-5s %-11s %d thr: %6.1f GB/s of weights, read bandwidth %5.1f GB/s, roofline %3.0f%%\n",
                    row.type.c_str(), row.shape.c_str(), threads, row.gbps, row.bw, 100 * row.gbps / row.bw);
        std::fflush(stdout);
      }
    }
  }
  std::printf("\n| type | k x n | GB/s 1 thr | roofline 1 thr | GB/s 2 thr | roofline 2 thr |\n|---|---|---|---|---|---|\n");
  for (size_t i = 0; i + 1 < rows.size(); i += 2) {
    if (rows[i].bw == 0) {
      std::printf("| %s | %s | n/a | | n/a | |\n", rows[i].type.c_str(), rows[i].shape.c_str());
      continue;
    }
    std::printf("| %s | %s | %.1f | %.0f%% | %.1f | %.0f%% |\n", rows[i].type.c_str(), rows[i].shape.c_str(), rows[i].gbps,
                100 * rows[i].gbps / rows[i].bw, rows[i + 1].gbps, 100 * rows[i + 1].gbps / rows[i + 1].bw);
  }
  return 0;
}
