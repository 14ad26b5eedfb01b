// A group of one (InitOptions::allow_single_process, no launcher): the collectives are the
// identity, and DistributedDataParallel trains exactly as plain value_and_grad does.
#include <gtest/gtest.h>

#include <cstdlib>

#include "spore/context.h"
#include "spore/dist.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::dist {
namespace {

ProcessGroup& self_group() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "RANK", "WORLD_SIZE"})
    unsetenv(v);
  InitOptions o;
  o.allow_single_process = true;
  return init(o);
}

// `spore launch` exports SPORE_NUM_THREADS = cores / ranks; init() makes it the context's count.
TEST(SelfGroup, ThreadCountFromTheLauncher) {
  if (is_initialized())
    GTEST_SKIP() << "needs a process whose group is not made yet (ctest runs each test alone)";
  ContextGuard guard;
  set_num_threads(0);
  setenv("SPORE_NUM_THREADS", "1", 1);
  self_group();
  unsetenv("SPORE_NUM_THREADS");
  EXPECT_EQ(context().num_threads, 1);
}

TEST(SelfGroup, CollectivesOfOneRank) {
  ProcessGroup& g = self_group();
  EXPECT_EQ(g.size(), 1);
  EXPECT_STREQ(g.backend_name(), "self");
  Tensor x = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f}, Shape{3});
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax})
    EXPECT_EQ(g.all_reduce(x, op).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(g.all_gather(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(g.broadcast(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_EQ(g.reduce_scatter(x).to_vector<float>(), x.to_vector<float>());
  Tensor h = cast(x, DType::kFloat16);
  EXPECT_EQ(g.all_reduce(h).dtype(), DType::kFloat16);
  g.barrier();
  EXPECT_EQ(&world(), &g);
  EXPECT_EQ(&init(), &g);  // a second init returns the same group
}

TEST(SelfGroup, DataParallelOfOneIsPlainTraining) {
  ProcessGroup& g = self_group();
  auto make = [] {
    return std::make_shared<nn::SequentialCell>(
        std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(6, 8, true, "relu", 4),
                                 std::make_shared<nn::Dense>(8, 3, true, nullptr, 5)});
  };
  auto plain = make(), wrapped = make();
  DdpOptions o;
  o.bucket_bytes = 64;  // a bucket per parameter or so
  DistributedDataParallel ddp(wrapped, g, o);
  EXPECT_GE(ddp.buckets().num_buckets(), 3u);
  optim::Adam a(plain->trainable_params(), 1e-2), b(ddp.trainable_params(), 1e-2);
  auto vg_plain = value_and_grad(
      [&](const std::vector<Tensor>& in) { return nn::cross_entropy((*plain)(in[0]), in[1]); },
      GradPosition::none(), plain->trainable_params());
  auto vg_ddp = ddp.value_and_grad(
      [&](const std::vector<Tensor>& in) { return nn::cross_entropy(ddp(in[0]), in[1]); });
  for (int step = 0; step < 5; ++step) {
    Tensor x = random_normal({5, 6}, (uint64_t)step);
    Tensor y = cast(mul(random_uniform({5}, 50 + (uint64_t)step), 2.999), DType::kInt64);
    ValueAndGrad p = vg_plain({x, y}), d = vg_ddp({x, y});
    EXPECT_EQ(p.value.item<float>(), d.value.item<float>());
    ASSERT_EQ(p.weight_grads.size(), d.weight_grads.size());
    for (size_t k = 0; k < p.weight_grads.size(); ++k)
      EXPECT_EQ(p.weight_grads[k].to_vector<float>(), d.weight_grads[k].to_vector<float>()) << k;
    a(p.weight_grads);
    b(d.weight_grads);
  }
  EXPECT_EQ(ddp.buckets().launched_during_backward(), ddp.buckets().num_buckets());
}

}  // namespace
}  // namespace spore::dist
