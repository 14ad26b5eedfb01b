// Peer measurement for BM_EagerAdd2x2 (bench/elementwise_bench.cc): the same eager `a + b` on
// 2x2 float32 through libtorch's C++ API, a new result tensor each call, autograd off.
// Prints the median ns/op of several repeats. Built by bench/run_dispatch.sh.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include <time.h>

// CPU time of this thread, as Google Benchmark's "CPU" column reports it: on a loaded machine
// the wall time mostly measures the scheduler.
static double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main() {
  at::set_num_threads(1);
  torch::NoGradGuard no_grad;
  torch::Tensor a = torch::tensor({1.f, 2.f, 3.f, 4.f}).reshape({2, 2});
  torch::Tensor b = torch::tensor({5.f, 6.f, 7.f, 8.f}).reshape({2, 2});
  const int kIters = 200000;
  std::vector<double> runs, cpu;
  for (int r = 0; r < 7; ++r) {
    double c0 = thread_cpu_ns();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kIters; ++i) {
      torch::Tensor c = a + b;
      asm volatile("" : : "r"(c.unsafeGetTensorImpl()) : "memory");
    }
    auto t1 = std::chrono::steady_clock::now();
    cpu.push_back((thread_cpu_ns() - c0) / kIters);
    runs.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kIters);
  }
  std::sort(runs.begin(), runs.end());
  std::sort(cpu.begin(), cpu.end());
  std::printf("libtorch %s eager add 2x2 float32: %.1f ns/op wall, %.1f ns/op cpu (medians of %zu)\n",
              TORCH_VERSION, runs[runs.size() / 2], cpu[cpu.size() / 2], runs.size());
  return 0;
}
