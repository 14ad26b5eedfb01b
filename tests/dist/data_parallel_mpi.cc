// Data-parallel training on 2 and 4 ranks (mpirun) against single-process training, which every
// rank also runs by itself on the combined batch as the reference (NOTE [Distributed training]).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

#include "common/digits_cnn.h"
#include "spore/checkpoint.h"
#include "spore/dist.h"
#include "spore/jit.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"
#include "training_fixtures.h"

namespace spore::dist {
namespace {

using namespace test;

TEST(DataParallel, ParametersStartAsRankZeros) {
  ProcessGroup& g = world();
  nn::CellPtr net = make_mlp(10 + (uint64_t)g.rank() * 100);  // a different start on every rank
  DistributedDataParallel ddp(net, g);
  nn::CellPtr rank0 = make_mlp(10);
  EXPECT_EQ(param_values(*net), param_values(*rank0));
}

// A parameter the loss never reads: its gradient is reported (zeros) after the backward walk, so
// its bucket (the first to fill, buckets running from the last parameter back) completes instead of
// waiting for a gradient that never comes, and the used parameters get the combined batch's mean.
TEST(DataParallel, UnusedParameterGetsZerosAndNoBucketWaits) {
  ProcessGroup& g = world();
  const int64_t B = 4;
  auto used = std::make_shared<nn::Dense>(16, 10, true, nullptr, 31);
  auto unused = std::make_shared<nn::Dense>(10, 10, true, nullptr, 32);
  auto net = std::make_shared<nn::SequentialCell>(std::vector<nn::CellPtr>{used, unused});
  TensorFn loss = [&](const std::vector<Tensor>& in) { return nn::cross_entropy((*used)(in[0]), in[1]); };
  const Batch all = mlp_batch(0, B * g.size());
  // The reference: one process on the combined batch.
  auto single = spore::value_and_grad(loss, GradPosition::none(), net->trainable_params());
  std::vector<Tensor> want = single({all.x, all.y}).weight_grads;
  DdpOptions o;
  o.bucket_bytes = 64;  // a bucket per parameter or so
  DistributedDataParallel ddp(net, g, o);
  ASSERT_GT(ddp.buckets().num_buckets(), 2u);
  const Batch mine = shard(all, g.rank(), B);
  std::vector<Tensor> got = ddp.value_and_grad(loss)({mine.x, mine.y}).weight_grads;
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), 4u);  // used.weight, used.bias, unused.weight, unused.bias
  for (size_t k = 0; k < got.size(); ++k) {
    std::vector<double> a = cast(got[k], DType::kFloat64).to_vector<double>();
    std::vector<double> b = cast(want[k], DType::kFloat64).to_vector<double>();
    ASSERT_EQ(a.size(), b.size());
    double worst = 0, largest = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      worst = std::max(worst, std::abs(a[i] - b[i]));
      largest = std::max(largest, std::abs(b[i]));
    }
    EXPECT_LE(worst, 1e-6) << "parameter " << k;
    if (k < 2) {
      EXPECT_GT(largest, 1e-3) << "a used parameter must have a gradient to compare";
    } else {
      EXPECT_EQ(largest, 0.0) << "the unused parameter's reference gradient is zero";
    }
  }
}

// N steps on R ranks with per-rank batch B == N steps of one process with batch R * B, within
// float32 reduction-order tolerance; small buckets (several per step) and the default one.
TEST(DataParallel, MlpMatchesSingleProcessOnTheCombinedBatch) {
  ProcessGroup& g = world();
  const int64_t B = 8;
  const int steps = 10;
  auto batch = [&](int64_t t) { return mlp_batch(t, B * g.size()); };
  nn::CellPtr single = make_mlp(0);
  const auto init = param_values(*single);
  train_single(*single, steps, batch);
  const auto want = param_values(*single);
  ASSERT_GT(max_diff(want, init), 1e-2)
      << "training must move the parameters for the comparison to mean anything";
  for (int64_t bucket_bytes : {int64_t{1024}, int64_t{25} << 20}) {
    nn::CellPtr net = make_mlp(0);
    DdpOptions o;
    o.bucket_bytes = bucket_bytes;
    DistributedDataParallel ddp(net, g, o);
    train_ddp(ddp, steps, batch, B);
    EXPECT_LE(max_diff(param_values(*net), want), 2e-5) << "bucket_bytes " << bucket_bytes;
    if (bucket_bytes == 1024) {
      EXPECT_GT(ddp.buckets().num_buckets(), 2u);
      // Every bucket was started from the gradient-ready hook, during backward.
      EXPECT_EQ(ddp.buckets().launched_during_backward(), ddp.buckets().num_buckets());
    } else {
      EXPECT_EQ(ddp.buckets().num_buckets(), 1u);
    }
  }
}

// With the rank-order reduction the result is bitwise the single-process computation that forms
// each rank's shard gradient and folds them in rank order in float32: ((g0 + g1) + g2) + g3, / R.
TEST(DataParallel, RankOrderReductionIsBitwiseTheSequentialFold) {
  ProcessGroup& g = world();
  const int64_t B = 6;
  const int steps = 6;
  auto batch = [&](int64_t t) { return mlp_batch(t, B * g.size()); };
  nn::CellPtr ref = make_mlp(3);
  {
    auto opt = sgd(ref->trainable_params());
    auto vg = spore::value_and_grad(xent(*ref), GradPosition::none(), ref->trainable_params());
    for (int t = 0; t < steps; ++t) {
      std::vector<Tensor> sum;
      for (int r = 0; r < g.size(); ++r) {
        Batch s = shard(batch(t), r, B);
        std::vector<Tensor> gr = vg({s.x, s.y}).weight_grads;
        if (r == 0)
          sum = gr;
        else
          for (size_t k = 0; k < gr.size(); ++k) sum[k] = add(sum[k], gr[k]);
      }
      for (Tensor& s : sum) s = div(s, (double)g.size());
      opt->step(sum);
    }
  }
  nn::CellPtr net = make_mlp(3);
  DdpOptions o;
  o.in_rank_order = true;
  o.bucket_bytes = 2048;
  DistributedDataParallel ddp(net, g, o);
  train_ddp(ddp, steps, batch, B);
  EXPECT_EQ(max_diff(param_values(*net), param_values(*ref)), 0.0);
  EXPECT_EQ(param_values(*net), param_values(*ref));  // bitwise
}

// The digits CNN of examples/ (convolutions, pooling), the same comparison on real data.
TEST(DataParallel, DigitsCnnMatchesSingleProcessOnTheCombinedBatch) {
  ProcessGroup& g = world();
  const int64_t B = 8;
  const int steps = 6;
  const DigitsReference ref = digits_reference(g, B, steps);
  const auto& batch = ref.batch;
  const auto& want = ref.want;
  auto net = examples::make_digits_cnn(5);
  DistributedDataParallel ddp(net, g);
  train_ddp(ddp, steps, batch, B);
  EXPECT_LE(max_diff(param_values(*net), want), 2e-5);
}

TEST(DataParallel, SamplerShardsAreDisjointAcrossRanks) {
  ProcessGroup& g = world();
  for (int64_t n : {int64_t{40}, int64_t{41}}) {
    for (bool drop_last : {false, true}) {
      DistributedSampler s(n, g.size(), g.rank(), true, 9, drop_last);
      s.set_epoch(3);
      std::vector<int64_t> mine = s.indices();
      ASSERT_EQ((int64_t)mine.size(), s.num_samples());
      std::vector<int64_t> all = g.all_gather(Tensor::from_vector(mine)).to_vector<int64_t>();
      std::multiset<int64_t> counts(all.begin(), all.end());
      std::set<int64_t> distinct(all.begin(), all.end());
      EXPECT_EQ((int64_t)all.size(), s.total_size());
      if (drop_last || n % g.size() == 0) {
        EXPECT_EQ(distinct.size(), all.size()) << "n " << n << ": a sample on two ranks";
      } else {
        EXPECT_EQ((int64_t)distinct.size(), n) << "padding must still cover every sample";
      }
      for (int64_t i : all) ASSERT_TRUE(i >= 0 && i < n);
    }
  }
}

// Mixed precision's overflow check agreed across ranks: only rank 1's shard overflows (an inf in
// its input), yet every rank's DynamicLossScaler skips the same step and backs off alike, because
// the all-reduce carries rank 1's non-finite gradients to everyone. Were the check local, rank 0
// would step and the replicas would part.
TEST(DataParallel, LossScaleOverflowOnOneRankSkipsTheStepOnEveryRank) {
  ProcessGroup& g = world();
  nn::CellPtr net = make_mlp(31);
  DistributedDataParallel ddp(net, g);
  const auto start = param_values(*net);
  auto opt = sgd(ddp.trainable_params());
  optim::DynamicLossScaler scaler(1024.0);
  auto vg = ddp.value_and_grad([&](const std::vector<Tensor>& in) {
    return scaler.scale_loss(nn::cross_entropy((*net)(in[0]), in[1]));
  });
  const int64_t per_rank = 4;
  std::vector<int> stepped;
  for (int t = 0; t < 2; ++t) {
    Batch b = shard(mlp_batch(t, per_rank * g.size()), g.rank(), per_rank);
    if (t == 0 && g.rank() == 1) {
      std::vector<float> x = b.x.contiguous().to_vector<float>();
      x[3] = std::numeric_limits<float>::infinity();
      b.x = Tensor::from_vector(x, b.x.shape());
    }
    std::vector<Tensor> grads = vg({b.x, b.y}).weight_grads;
    const bool finite = scaler.unscale(grads);
    if (finite) opt->step(grads);
    stepped.push_back(finite);
  }
  EXPECT_EQ(stepped, (std::vector<int>{0, 1})) << "rank " << g.rank();
  EXPECT_EQ(scaler.skipped_steps(), 1);
  EXPECT_EQ(scaler.scale(), 512.0);
  // Step 0 changed nothing anywhere, step 1 moved every rank the same way: rank 0's values.
  const auto mine = param_values(*net);
  EXPECT_GT(max_diff(mine, start), 1e-4);
  for (const Parameter& p : net->parameters()) {
    Tensor ref = g.broadcast(p.value(), 0);
    EXPECT_EQ(cast(ref, DType::kFloat64).to_vector<double>(),
              cast(p.value(), DType::kFloat64).to_vector<double>())
        << p.name() << " on rank " << g.rank();
  }
}

TEST(DataParallel, CheckpointWrittenByRankZeroLoadsEverywhere) {
  ProcessGroup& g = world();
  // One directory name for all ranks: rank 0's process id.
  std::vector<int64_t> pid{(int64_t)getpid()};
  pid = g.broadcast(Tensor::from_vector(pid), 0).to_vector<int64_t>();
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("spore-dist-" + std::to_string(pid[0]));
  if (g.rank() == 0) std::filesystem::create_directories(dir);
  g.barrier();
  nn::CellPtr net = make_mlp(21);
  DistributedDataParallel ddp(net, g);
  save_checkpoint(g, *net, dir / "mlp.ckpt");
  Checkpoint c = load_checkpoint(dir / "mlp.ckpt");
  EXPECT_EQ(c.metadata["world_size"], std::to_string(g.size()));
  nn::CellPtr fresh = make_mlp(99);
  load_param_into_net(*fresh, c);
  EXPECT_EQ(param_values(*fresh), param_values(*net));
  // No temporary file left beside it (the write is atomic: temporary, then rename).
  size_t files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
  // A path rank 0 cannot write: every rank gets rank 0's error, none believes it saved.
  try {
    save_checkpoint(g, *net, dir / "missing" / "deeper" / "x.ckpt");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIO);
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  g.barrier();
  if (g.rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace spore::dist
