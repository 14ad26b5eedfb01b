// DistributedSampler against PyTorch's documented algorithm (torch.utils.data.DistributedSampler):
// pad the permutation by repeating its start to ceil(n / R) * R, or with drop_last cut it to
// floor(n / R) * R, then rank r takes positions r, r + R, r + 2R, ...
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "spore/dist.h"

namespace spore::dist {
namespace {

std::vector<int64_t> shard(int64_t n, int R, int r, bool drop_last, bool shuffle = false,
                           int64_t epoch = 0) {
  DistributedSampler s(n, R, r, shuffle, 17, drop_last);
  s.set_epoch(epoch);
  return s.indices();
}

TEST(DistributedSampler, UnevenEndPaddedOrDroppedAsPyTorch) {
  // n = 10, R = 3 without shuffling: padded order 0..9, 0, 1.
  EXPECT_EQ(shard(10, 3, 0, false), (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(shard(10, 3, 1, false), (std::vector<int64_t>{1, 4, 7, 0}));
  EXPECT_EQ(shard(10, 3, 2, false), (std::vector<int64_t>{2, 5, 8, 1}));
  // drop_last: 9 samples used.
  EXPECT_EQ(shard(10, 3, 0, true), (std::vector<int64_t>{0, 3, 6}));
  EXPECT_EQ(shard(10, 3, 2, true), (std::vector<int64_t>{2, 5, 8}));
  // More ranks than samples: padding wraps around as often as needed.
  EXPECT_EQ(shard(2, 5, 4, false), (std::vector<int64_t>{0}));
  EXPECT_EQ(shard(2, 5, 3, false), (std::vector<int64_t>{1}));
}

TEST(DistributedSampler, ShuffledShardsAreDisjointSeededAndChangeEachEpoch) {
  const int64_t n = 103;
  const int R = 4;
  std::vector<int64_t> epoch0, epoch1;
  for (int r = 0; r < R; ++r) {
    std::vector<int64_t> a = shard(n, R, r, true, true, 0), b = shard(n, R, r, true, true, 1);
    EXPECT_EQ(a, shard(n, R, r, true, true, 0)) << "the same seed and epoch give the same shard";
    epoch0.insert(epoch0.end(), a.begin(), a.end());
    epoch1.insert(epoch1.end(), b.begin(), b.end());
  }
  EXPECT_EQ(epoch0.size(), 100u);  // floor(103 / 4) * 4
  EXPECT_EQ(std::set<int64_t>(epoch0.begin(), epoch0.end()).size(), 100u)
      << "a sample on two ranks";
  EXPECT_NE(epoch0, epoch1) << "a new epoch must reshuffle";
  std::vector<int64_t> sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NE(sorted, epoch0) << "shuffled";
}

TEST(DistributedSampler, DatasetPassesAdvanceTheEpoch) {
  DistributedSampler s(12, 2, 1, true, 5);
  const std::vector<int64_t> e0 = s.indices();
  s.set_epoch(1);
  const std::vector<int64_t> e1 = s.indices();
  s.set_epoch(0);
  data::Dataset ds =
      s.dataset([](int64_t i) { return data::Row{Tensor::scalar<int64_t>(i)}; }, {"index"});
  std::vector<int64_t> got;
  for (const data::Row& row : ds.repeat(2).create_tuple_iterator())
    got.push_back(row[0].item<int64_t>());
  std::vector<int64_t> want = e0;
  want.insert(want.end(), e1.begin(), e1.end());
  EXPECT_EQ(got, want);
  EXPECT_EQ(s.epoch(), 2);
}

TEST(DistributedSampler, BadArgumentsAreValueErrors) {
  for (auto make : {+[] { DistributedSampler(10, 0, 0); }, +[] { DistributedSampler(10, 2, 2); },
                    +[] { DistributedSampler(10, 2, -1); },
                    +[] { DistributedSampler(1, 2, 0, true, 0, true); }}) {
    try {
      make();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kValue);
    }
  }
}

}  // namespace
}  // namespace spore::dist
