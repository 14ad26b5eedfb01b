// Data-parallel benchmarks under mpirun (bench/run_dist.py drives them; NOTE [Distributed
// training]). Not Google Benchmark: every rank must run the same number of iterations, in step.
//
//   dist_bench step mlp|cnn [steps]   one training step (forward, backward, all-reduce of the
//        gradients through DistributedDataParallel, Adam) at a fixed global batch split over the
//        ranks: MLP 784-512-512-10 at 128 rows, the digits CNN at 32 (bench/train_bench.cc's
//        workloads). One rank runs the plain single-process step (no DDP): the baseline.
//   dist_bench allreduce [iters] [max_mib]   ProcessGroup all_reduce (sum, in place, float32) on
//        1 MiB to 256 MiB (or max_mib) buffers; bench/peers/mpi_allreduce.c times MPI_Allreduce on
//        the same sizes. SPORE_MPI_ALLREDUCE_THREAD=0 selects the non-blocking path (NOTE
//        [All-reduce on MPI's blocking path]).
// Rank 0 prints "spore <what> ... median_ms=<m>" lines; threads per rank: SPORE_NUM_THREADS.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/digits_cnn.h"
#include "spore/context.h"
#include "spore/dist.h"
#include "spore/nn/dense.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace {

using namespace spore;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The slowest rank's time decides a synchronous step: the median over steps of the max over ranks.
double slowest_median(dist::ProcessGroup& g, const std::vector<double>& ms) {
  Tensor t = Tensor::from_vector(ms, Shape{(int64_t)ms.size()});
  return median(g.all_reduce(t, dist::ReduceOp::kMax).to_vector<double>());
}

int run_step(dist::ProcessGroup& g, const std::string& model, int steps) {
  const bool mlp = model == "mlp";
  if (!mlp && model != "cnn") {
    std::fprintf(stderr, "dist_bench step: model must be mlp or cnn\n");
    return 2;
  }
  const int64_t global = mlp ? 128 : 32;
  if (global % g.size() != 0) {
    std::fprintf(stderr, "dist_bench step: %d ranks do not divide the batch of %lld\n", g.size(), (long long)global);
    return 2;
  }
  const int64_t rows = global / g.size();
  nn::CellPtr net;
  Tensor x;
  if (mlp) {
    net = std::make_shared<nn::SequentialCell>(
        std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(784, 512, true, "relu", 1),
                                 std::make_shared<nn::Dense>(512, 512, true, "relu", 2),
                                 std::make_shared<nn::Dense>(512, 10, true, nullptr, 3)});
    x = random_normal({rows, 784}, 5 + (uint64_t)g.rank());
  } else {
    net = examples::make_digits_cnn(0);
    x = random_uniform({rows, 1, 8, 8}, 7 + (uint64_t)g.rank());
  }
  Tensor y = cast(mul(random_uniform({rows}, 6 + (uint64_t)g.rank()), 10.0), DType::kInt64);
  auto loss_fn = [&net](const std::vector<Tensor>& in) { return nn::cross_entropy((*net)(in[0]), in[1]); };
  std::function<ValueAndGrad(const std::vector<Tensor>&)> step;
  std::unique_ptr<dist::DistributedDataParallel> ddp;
  if (g.size() > 1) {
    ddp = std::make_unique<dist::DistributedDataParallel>(net, g);
    step = ddp->value_and_grad(loss_fn);
  } else {
    step = value_and_grad(loss_fn, GradPosition::none(), net->trainable_params());
  }
  optim::Adam opt(net->trainable_params(), mlp ? 1e-3 : 2e-3);
  std::vector<double> ms;
  double loss = 0;
  for (int i = 0; i < steps + 10; ++i) {
    const auto t0 = Clock::now();
    ValueAndGrad vg = step({x, y});
    opt(vg.weight_grads);
    loss = vg.value.item<double>();
    if (i >= 10) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double m = slowest_median(g, ms);
  if (g.rank() == 0)
    std::printf("spore step=%s ranks=%d threads=%d batch=%lld median_ms=%.4f loss=%.4e\n", model.c_str(), g.size(),
                context().num_threads, (long long)global, m, loss);
  return 0;
}

int run_allreduce(dist::ProcessGroup& g, int iters, int64_t max_mib) {
  for (int64_t mib = 1; mib <= max_mib; mib *= 4) {
    const int64_t n = (mib << 20) / 4;
    Tensor buf = full({n}, 0.0);  // zeros: the sums stay finite however often they repeat
    const int reps = mib >= 64 ? std::max(3, iters / 4) : iters;
    std::vector<double> ms;
    for (int i = 0; i < reps + 2; ++i) {
      g.barrier();
      const auto t0 = Clock::now();
      g.all_reduce_inplace(buf, dist::ReduceOp::kSum, false);
      if (i >= 2) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    const double m = slowest_median(g, ms);
    if (g.rank() == 0)
      std::printf("spore allreduce ranks=%d mib=%lld median_ms=%.4f\n", g.size(), (long long)mib, m);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: dist_bench step mlp|cnn [steps] | dist_bench allreduce [iters] [max_mib]\n");
    return 2;
  }
  try {
    dist::ProcessGroup& g = dist::init();
    const std::string what = argv[1];
    int rc = 2;
    if (what == "step" && argc >= 3)
      rc = run_step(g, argv[2], argc > 3 ? std::atoi(argv[3]) : 50);
    else if (what == "allreduce")
      rc = run_allreduce(g, argc > 2 ? std::atoi(argv[2]) : 20, argc > 3 ? std::atoll(argv[3]) : 256);
    else
      std::fprintf(stderr, "dist_bench: unknown mode %s\n", what.c_str());
    dist::finalize();
    return rc;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_bench: %s\n", e.what());
    return 1;
  }
}
