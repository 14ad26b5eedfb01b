// DistributedSampler: each rank's shard of an epoch's permutation, as PyTorch's sampler draws it
// (disjoint strided shards of one permutation; the uneven end padded or dropped).
#include <numeric>
#include <random>

#include "spore/dist.h"

namespace spore::dist {

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : n_(dataset_size),
      replicas_(num_replicas),
      rank_(rank),
      shuffle_(shuffle),
      seed_(seed),
      epoch_(std::make_shared<int64_t>(0)) {
  if (num_replicas < 1)
    throw Error(ErrorCode::kValue, "DistributedSampler: num_replicas must be at least 1, got " +
                                       std::to_string(num_replicas));
  if (rank < 0 || rank >= num_replicas)
    throw Error(ErrorCode::kValue, "DistributedSampler: rank " + std::to_string(rank) +
                                       " is not in [0, " + std::to_string(num_replicas) + ")");
  if (dataset_size < 0)
    throw Error(ErrorCode::kValue, "DistributedSampler: the dataset size is negative");
  if (drop_last && dataset_size < num_replicas)
    throw Error(
        ErrorCode::kValue,
        "DistributedSampler: drop_last with " + std::to_string(dataset_size) + " samples for " +
            std::to_string(num_replicas) +
            " ranks leaves every rank nothing; use drop_last = false (pads) or fewer ranks");
  num_samples_ =
      drop_last ? dataset_size / num_replicas : (dataset_size + num_replicas - 1) / num_replicas;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> order((size_t)n_);
  std::iota(order.begin(), order.end(), 0);
  if (shuffle_) {
    // Fisher-Yates spelled out (std::shuffle differs between standard libraries), from
    // seed + epoch as PyTorch seeds its generator: every rank draws the same permutation.
    std::mt19937_64 gen(seed_ + (uint64_t)*epoch_);
    for (int64_t i = n_ - 1; i > 0; --i)
      std::swap(order[i], order[(int64_t)(gen() % (uint64_t)(i + 1))]);
  }
  const int64_t total = total_size();
  if (total > n_) {
    // Pad by repeating the permutation from its start, as often as needed.
    for (int64_t i = n_; i < total; ++i) order.push_back(order[(size_t)((i - n_) % n_)]);
  } else {
    order.resize((size_t)total);
  }
  std::vector<int64_t> mine;
  mine.reserve((size_t)num_samples_);
  for (int64_t i = rank_; i < total; i += replicas_) mine.push_back(order[(size_t)i]);
  return mine;
}

data::Dataset DistributedSampler::dataset(data::RandomAccessFn fn,
                                          std::vector<std::string> column_names) const {
  const DistributedSampler self = *this;  // shares the epoch counter
  return data::GeneratorDataset(
      [self, fn = std::move(fn)]() -> data::GeneratorFn {
        auto idx = std::make_shared<std::vector<int64_t>>(self.indices());
        ++*self.epoch_;
        auto pos = std::make_shared<size_t>(0);
        return [idx, pos, fn]() -> std::optional<data::Row> {
          if (*pos >= idx->size()) return std::nullopt;
          return fn((*idx)[(*pos)++]);
        };
      },
      std::move(column_names));
}

}  // namespace spore::dist
