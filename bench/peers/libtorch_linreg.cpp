// libtorch peer of BM_LinregTrain200 (bench/train_bench.cc): 200 Adam steps (lr 0.05) of
// Linear(4, 1) on 64x4 float32 data with MSE, timed per 200-step run on a fresh layer.
// usage: libtorch_linreg [runs]   prints "libtorch linreg_train200 median_ms=... min_ms=..."
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 10;
  const char* t = std::getenv("SPORE_BENCH_THREADS");
  torch::set_num_threads(t ? std::atoi(t) : 2);
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({64, 4});
  torch::Tensor y = torch::matmul(x, torch::tensor({0.5f, -0.75f, 0.25f, 1.0f}).reshape({4, 1})) + 0.125;
  std::vector<double> ms;
  float loss = 0;
  for (int r = 0; r < runs + 2; ++r) {
    torch::nn::Linear model(4, 1);
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.05));
    const auto t0 = std::chrono::steady_clock::now();
    torch::Tensor l;
    for (int s = 0; s < 200; ++s) {
      opt.zero_grad();
      l = torch::mse_loss(model->forward(x), y);
      l.backward();
      opt.step();
    }
    loss = l.item<float>();
    const double dt = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (r >= 2) ms.push_back(dt);  // the first two runs warm the allocator and the thread pool
  }
  std::sort(ms.begin(), ms.end());
  std::printf("libtorch linreg_train200 median_ms=%.4f min_ms=%.4f loss=%.4e\n", ms[ms.size() / 2], ms[0], loss);
}
