// The data-parallel tests' shared pieces (tests/dist/*_mpi.cc): the MLP, each step's batch and
// its shards, the single-process and DDP training loops, and parameter comparisons.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "common/digits_cnn.h"
#include "spore/dist.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace spore::dist::test {

inline nn::CellPtr make_mlp(uint64_t seed) {
  return std::make_shared<nn::SequentialCell>(
      std::vector<nn::CellPtr>{std::make_shared<nn::Dense>(16, 24, true, "relu", seed + 1),
                               std::make_shared<nn::Dense>(24, 24, true, "relu", seed + 2),
                               std::make_shared<nn::Dense>(24, 10, true, nullptr, seed + 3)});
}

// Step t's combined batch of `rows` rows: inputs [rows, features...] and int64 labels.
struct Batch {
  Tensor x, y;
};
inline Batch mlp_batch(int64_t t, int64_t rows) {
  return {random_normal({rows, 16}, 1000 + (uint64_t)t),
          cast(mul(random_uniform({rows}, 2000 + (uint64_t)t), 9.999), DType::kInt64)};
}
inline Batch shard(const Batch& b, int rank, int64_t per_rank) {
  return {slice(b.x, 0, rank * per_rank, (rank + 1) * per_rank),
          slice(b.y, 0, rank * per_rank, (rank + 1) * per_rank)};
}

inline std::vector<std::vector<double>> param_values(nn::Cell& net) {
  std::vector<std::vector<double>> out;
  for (const Parameter& p : net.parameters())
    out.push_back(cast(p.value(), DType::kFloat64).to_vector<double>());
  return out;
}

// Largest |a - b| over every parameter, and the largest change of any parameter since `init`.
inline double max_diff(const std::vector<std::vector<double>>& a,
                const std::vector<std::vector<double>>& b) {
  double m = 0;
  for (size_t k = 0; k < a.size(); ++k)
    for (size_t i = 0; i < a[k].size(); ++i) m = std::max(m, std::abs(a[k][i] - b[k][i]));
  return m;
}

inline std::unique_ptr<optim::Optimizer> sgd(std::vector<Parameter> p) {
  return std::make_unique<optim::SGD>(std::move(p), 0.05, 0.9);
}

inline TensorFn xent(nn::Cell& net) {
  return [&net](const std::vector<Tensor>& in) { return nn::cross_entropy(net(in[0]), in[1]); };
}

// Trains `net` alone (plain value_and_grad) on each step's whole batch: the single-process run.
inline void train_single(nn::Cell& net, int steps, const std::function<Batch(int64_t)>& batch) {
  auto opt = sgd(net.trainable_params());
  auto vg = spore::value_and_grad(xent(net), GradPosition::none(), net.trainable_params());
  for (int t = 0; t < steps; ++t) {
    Batch b = batch(t);
    opt->step(vg({b.x, b.y}).weight_grads);
  }
}

// Trains through DistributedDataParallel, this rank on its shard of each step's batch.
inline void train_ddp(DistributedDataParallel& ddp, int steps, const std::function<Batch(int64_t)>& batch,
               int64_t per_rank) {
  auto opt = sgd(ddp.trainable_params());
  auto vg = ddp.value_and_grad(xent(ddp.module()));
  for (int t = 0; t < steps; ++t) {
    Batch b = shard(batch(t), world().rank(), per_rank);
    opt->step(vg({b.x, b.y}).weight_grads);
  }
}

// The digits CNN's data split into global batches of B rows per rank, and the parameters one
// process reaches after `steps` steps on those combined batches: the reference every DDP run of
// the CNN (eager or compiled) is held to.
struct DigitsReference {
  std::function<Batch(int64_t)> batch;
  std::vector<std::vector<double>> want;
};
inline DigitsReference digits_reference(ProcessGroup& g, int64_t B, int steps) {
  auto d = std::make_shared<examples::DigitsSplit>(examples::load_digits(examples::kDigitsPath, 0.2, 7));
  const int64_t rows = B * g.size();
  DigitsReference r;
  r.batch = [d, rows](int64_t t) {
    const int64_t start = (t * rows) % (d->train_images.shape()[0] - rows);
    return Batch{slice(d->train_images, 0, start, start + rows), slice(d->train_labels, 0, start, start + rows)};
  };
  auto single = examples::make_digits_cnn(5);
  const auto init = param_values(*single);
  train_single(*single, steps, r.batch);
  r.want = param_values(*single);
  EXPECT_GT(max_diff(r.want, init), 1e-3);  // the steps moved the parameters
  return r;
}

}  // namespace spore::dist::test
