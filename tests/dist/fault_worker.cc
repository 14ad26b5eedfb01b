// A program run under mpirun by fault_driver.cc to show that a lost rank ends the job with a
// clear error instead of a hang:
//   fault_worker stall   rank 1 stops calling collectives; the others' watchdog fires
//   fault_worker kill    rank 1 is killed (SIGKILL) in the middle of data-parallel training
// The watchdog timeout is 3 s (InitOptions), so the job must be over well before the driver's
// limit. Exit status: non-zero whenever a rank was lost (the point of the exercise).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "spore/dist.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

using namespace spore;

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "stall" && mode != "kill") {
    std::fprintf(stderr, "usage: fault_worker stall|kill\n");
    return 2;
  }
  dist::InitOptions o;
  o.timeout = std::chrono::seconds(3);
  dist::ProcessGroup& g = dist::init(o);
  try {
    if (mode == "stall") {
      g.barrier();
      if (g.rank() == 1) {
        std::this_thread::sleep_for(std::chrono::seconds(60));  // alive, but gone from the group
        return 0;
      }
      g.all_reduce(ones({16}));
      std::fprintf(stderr, "rank %d: all_reduce returned without rank 1\n", g.rank());
      return 4;
    }
    auto net = std::make_shared<nn::SequentialCell>(
        std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(8, 16, true, "relu", 1),
                                 std::make_shared<nn::Dense>(16, 4, true, nullptr, 2)});
    dist::DistributedDataParallel ddp(net, g);
    optim::SGD opt(ddp.trainable_params(), 0.1);
    auto vg = ddp.value_and_grad(
        [&](const std::vector<Tensor>& in) { return nn::cross_entropy(ddp(in[0]), in[1]); });
    for (int step = 0; step < 1000; ++step) {
      if (step == 3 && g.rank() == 1) raise(SIGKILL);
      Tensor x = random_normal({4, 8}, (uint64_t)step);
      Tensor y = cast(mul(random_uniform({4}, (uint64_t)step + 7), 3.999), DType::kInt64);
      opt(vg({x, y}).weight_grads);
    }
    std::fprintf(stderr, "rank %d: trained 1000 steps without rank 1\n", g.rank());
    return 4;
  } catch (const Error& e) {
    std::fprintf(stderr, "rank %d: spore::Error: %s\n", g.rank(), e.what());
    std::fflush(stderr);
    dist::finalize();  // the group is broken: this ends the job (MPI_Abort)
    return 1;
  }
}
