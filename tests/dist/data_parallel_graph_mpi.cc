// The compiled (jit) training step of a DistributedDataParallel network on 2 and 4 ranks: the
// buckets' all-reduces are graph nodes (NOTE [Data parallelism in graph mode]), and graph-mode
// training gives the parameters of eager DDP and of one process on the combined batch.
#include <gtest/gtest.h>

#include "common/digits_cnn.h"
#include "spore/collective.h"
#include "spore/dist.h"
#include "spore/jit.h"
#include "training_fixtures.h"

namespace spore::dist {
namespace {

using namespace test;

// The DDP step (forward, backward, bucket reduction, SGD) compiled by jit, this rank on its shard.
JitStats train_ddp_compiled(DistributedDataParallel& ddp, int steps,
                            const std::function<Batch(int64_t)>& batch, int64_t per_rank) {
  auto opt = sgd(ddp.trainable_params());
  auto vg = ddp.value_and_grad(xent(ddp.module()));
  JitFunction step = jit(TensorFn([&](const std::vector<Tensor>& in) {
    ValueAndGrad r = vg(in);
    opt->step(r.weight_grads);
    return r.value;
  }));
  for (int t = 0; t < steps; ++t) {
    Batch b = shard(batch(t), world().rank(), per_rank);
    step({b.x, b.y});
  }
  EXPECT_EQ(opt->steps_taken(), steps);
  return step.stats();
}

std::vector<const Node*> all_reduce_nodes(const graph::Graph& g) {
  std::vector<const Node*> out;
  for (size_t i = 0; i < g.num_nodes(); ++i)
    if (g.node((int)i).op() == OpId::k_all_reduce) out.push_back(&g.node((int)i));
  return out;
}

// One all_reduce node per bucket, mean or sum as gradients_mean says, each over its bucket's
// gradients concatenated (the node's input has the bucket's element count).
TEST(DataParallelGraph, CompiledStepHoldsOneAllReducePerBucket) {
  ProcessGroup& g = world();
  for (bool mean : {true, false}) {
    SCOPED_TRACE(mean ? "gradients_mean" : "sum");
    nn::CellPtr net = make_mlp(41);
    DdpOptions o;
    o.bucket_bytes = 1024;
    o.gradients_mean = mean;
    DistributedDataParallel ddp(net, g, o);
    auto opt = sgd(ddp.trainable_params());
    auto vg = ddp.value_and_grad(xent(*net));
    JitFunction step = jit(TensorFn([&](const std::vector<Tensor>& in) {
      ValueAndGrad r = vg(in);
      opt->step(r.weight_grads);
      return r.value;
    }));
    Batch b = shard(mlp_batch(0, 4 * g.size()), g.rank(), 4);
    step({b.x, b.y});
    step({b.x, b.y});
    const graph::Graph* graph = step.last_graph();
    ASSERT_NE(graph, nullptr);
    const std::vector<const Node*> nodes = all_reduce_nodes(*graph);
    ASSERT_GT(ddp.buckets().num_buckets(), 2u);
    ASSERT_EQ(nodes.size(), ddp.buckets().num_buckets());
    std::vector<int64_t> bucket_numel(ddp.buckets().num_buckets(), 0);
    const auto params = ddp.trainable_params();
    for (size_t k = 0; k < params.size(); ++k)
      bucket_numel[ddp.buckets().bucket_of()[k]] += params[k].value().numel();
    for (size_t i = 0; i < nodes.size(); ++i) {
      EXPECT_EQ(nodes[i]->attrs.i(0), (int64_t)(mean ? CollectiveReduce::kMean : CollectiveReduce::kSum));
      EXPECT_EQ(graph->value(graph->inputs(*nodes[i])[0]).meta.shape, Shape{bucket_numel[i]}) << "bucket " << i;
    }
    EXPECT_EQ(step.stats().hits, 1);
  }
}

// Eager DDP, compiled DDP and one process on the combined batch train the MLP to the same
// parameters; with the rank-order reduction the compiled step is bitwise the eager one.
TEST(DataParallelGraph, MlpCompiledMatchesEagerDdpAndSingleProcess) {
  ProcessGroup& g = world();
  const int64_t B = 8;
  const int steps = 8;
  auto batch = [&](int64_t t) { return mlp_batch(t, B * g.size()); };
  nn::CellPtr single = make_mlp(7);
  const auto init = param_values(*single);
  train_single(*single, steps, batch);
  const auto want = param_values(*single);
  ASSERT_GT(max_diff(want, init), 1e-2);
  for (bool ordered : {false, true}) {
    SCOPED_TRACE(ordered ? "in rank order" : "MPI's order");
    DdpOptions o;
    o.bucket_bytes = 2048;
    o.in_rank_order = ordered;
    nn::CellPtr eager_net = make_mlp(7), graph_net = make_mlp(7);
    DistributedDataParallel eager(eager_net, g, o), compiled(graph_net, g, o);
    train_ddp(eager, steps, batch, B);
    const JitStats stats = train_ddp_compiled(compiled, steps, batch, B);
    EXPECT_EQ(stats.misses, 1);
    EXPECT_EQ(stats.hits, steps - 1);  // the compiled graph ran every later step
    EXPECT_LE(max_diff(param_values(*graph_net), want), 2e-5);
    if (ordered)
      EXPECT_EQ(param_values(*graph_net), param_values(*eager_net));  // bitwise
    else
      EXPECT_LE(max_diff(param_values(*graph_net), param_values(*eager_net)), 2e-5);
  }
}

// The digits CNN (convolutions, pooling) compiled with DDP against one process.
TEST(DataParallelGraph, DigitsCnnCompiledMatchesSingleProcess) {
  ProcessGroup& g = world();
  const int64_t B = 8;
  const int steps = 5;
  const DigitsReference ref = digits_reference(g, B, steps);
  const auto& batch = ref.batch;
  const auto& want = ref.want;
  auto net = examples::make_digits_cnn(5);
  DistributedDataParallel ddp(net, g);
  const JitStats stats = train_ddp_compiled(ddp, steps, batch, B);
  EXPECT_EQ(stats.hits, steps - 1);
  EXPECT_LE(max_diff(param_values(*net), want), 2e-5);
}

}  // namespace
}  // namespace spore::dist
