// Collectives on 2 and 4 ranks (mpirun, tests/dist/CMakeLists.txt) against float64 references
// that each rank computes for itself: every rank's input is a known function of (rank, index).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "spore/dist.h"
#include "spore/ops.h"

namespace spore::dist {
namespace {

// Rank r's value at index i, in float64 (rounded to the tensor's dtype where it is used).
double value(int r, int64_t i) {
  return std::sin(0.37 * (double)i + 1.3 * r) * (1.0 + r) + 0.01 * r;
}

std::vector<double> values(int r, int64_t n) {
  std::vector<double> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = value(r, i);
  return v;
}

Tensor input(int r, const std::vector<int64_t>& shape, DType dtype) {
  const Shape s(shape);
  return cast(Tensor::from_vector(values(r, s.numel()), s), dtype);
}

// The float64 reference of a reduction of every rank's input (as rounded to `dtype`).
std::vector<double> reference(ProcessGroup& g, int64_t n, DType dtype, ReduceOp op) {
  std::vector<double> ref((size_t)n, op == ReduceOp::kMax ? -INFINITY : 0.0);
  for (int r = 0; r < g.size(); ++r) {
    std::vector<double> rounded = cast(input(r, {n}, dtype), DType::kFloat64).to_vector<double>();
    for (int64_t i = 0; i < n; ++i)
      ref[(size_t)i] = op == ReduceOp::kMax ? std::max(ref[(size_t)i], rounded[(size_t)i])
                                            : ref[(size_t)i] + rounded[(size_t)i];
  }
  if (op == ReduceOp::kMean)
    for (double& x : ref) x /= g.size();
  return ref;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], tol) << what << " at " << i;
}

TEST(Collectives, AllReduceSumMeanMaxAgainstFloat64) {
  ProcessGroup& g = world();
  const int64_t n = 1000;
  for (DType dt : {DType::kFloat32, DType::kFloat64, DType::kBFloat16}) {
    Tensor x = input(g.rank(), {10, 100}, dt);
    const std::vector<double> before = cast(x, DType::kFloat64).to_vector<double>();
    // Tolerances: float32 sums of at most 4 terms of magnitude <= 5 (a few ulps); bfloat16's
    // result is rounded once to 8 bits of mantissa.
    const double tol = dt == DType::kFloat64 ? 1e-13 : dt == DType::kFloat32 ? 1e-5 : 0.1;
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax}) {
      Tensor y = g.all_reduce(x, op);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_EQ(y.shape(), x.shape());
      expect_close(cast(y, DType::kFloat64).to_vector<double>(), reference(g, n, dt, op),
                   op == ReduceOp::kMax ? 0.0 : tol, reduce_op_name(op));
    }
    EXPECT_EQ(cast(x, DType::kFloat64).to_vector<double>(), before) << "the input changed";
  }
}

TEST(Collectives, AllReduceIntegersExact) {
  ProcessGroup& g = world();
  std::vector<int64_t> mine(50), want(50, 0);
  for (int i = 0; i < 50; ++i) mine[i] = (int64_t)(g.rank() + 1) * 1000003 * (i + 1);
  for (int r = 0; r < g.size(); ++r)
    for (int i = 0; i < 50; ++i) want[i] += (int64_t)(r + 1) * 1000003 * (i + 1);
  EXPECT_EQ(g.all_reduce(Tensor::from_vector(mine)).to_vector<int64_t>(), want);
}

TEST(Collectives, RankOrderSumIsTheSequentialFloat32Fold) {
  ProcessGroup& g = world();
  const int64_t n = 4096;
  std::vector<float> fold((size_t)n, 0.0f);
  for (int r = 0; r < g.size(); ++r) {
    std::vector<float> x = input(r, {n}, DType::kFloat32).to_vector<float>();
    for (int64_t i = 0; i < n; ++i)
      fold[(size_t)i] = r == 0 ? x[(size_t)i] : fold[(size_t)i] + x[(size_t)i];
  }
  Tensor y =
      g.all_reduce(input(g.rank(), {n}, DType::kFloat32), ReduceOp::kSum, /*in_rank_order=*/true);
  const std::vector<float> got = y.to_vector<float>();
  ASSERT_EQ(got.size(), fold.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], fold[i]) << "element " << i;  // bitwise
}

TEST(Collectives, BroadcastFromEveryRoot) {
  ProcessGroup& g = world();
  for (int root = 0; root < g.size(); ++root) {
    // Non-roots pass a tensor of the same shape with other contents: only the root's arrives.
    Tensor x =
        g.rank() == root ? input(root, {3, 7}, DType::kFloat64) : zeros({3, 7}, DType::kFloat64);
    Tensor y = g.broadcast(x, root);
    EXPECT_EQ(y.to_vector<double>(), values(root, 21)) << "root " << root;
  }
}

TEST(Collectives, AllGatherStacksRanksInOrder) {
  ProcessGroup& g = world();
  Tensor y = g.all_gather(input(g.rank(), {2, 5}, DType::kFloat64));
  ASSERT_EQ(y.shape(), Shape({2 * g.size(), 5}));
  std::vector<double> want;
  for (int r = 0; r < g.size(); ++r) {
    std::vector<double> v = values(r, 10);
    want.insert(want.end(), v.begin(), v.end());
  }
  EXPECT_EQ(y.to_vector<double>(), want);
  Tensor s = g.all_gather(Tensor::scalar<int64_t>(10 + g.rank()));
  std::vector<int64_t> ranks;
  for (int r = 0; r < g.size(); ++r) ranks.push_back(10 + r);
  EXPECT_EQ(s.to_vector<int64_t>(), ranks);
}

TEST(Collectives, ReduceScatterGivesEachRankItsBlockOfTheSum) {
  ProcessGroup& g = world();
  const int64_t per = 6, n = per * g.size();
  Tensor y = g.reduce_scatter(input(g.rank(), {n}, DType::kFloat64));
  ASSERT_EQ(y.shape(), Shape({per}));
  const std::vector<double> full = reference(g, n, DType::kFloat64, ReduceOp::kSum);
  expect_close(
      y.to_vector<double>(),
      std::vector<double>(full.begin() + g.rank() * per, full.begin() + (g.rank() + 1) * per),
      1e-13, "reduce_scatter");
}

TEST(Collectives, NonBlockingHandlesCompleteInAnyWaitOrder) {
  ProcessGroup& g = world();
  Work a = g.iall_reduce(input(g.rank(), {300}, DType::kFloat64));
  Work b = g.iall_gather(input(g.rank(), {4}, DType::kFloat64));
  Work c = g.ibroadcast(input(g.rank(), {8}, DType::kFloat64), g.size() - 1);
  Work d = g.ibarrier();
  d.wait();
  EXPECT_EQ(c.wait().to_vector<double>(), values(g.size() - 1, 8));
  EXPECT_EQ(b.wait().shape(), Shape({4 * g.size()}));
  expect_close(a.wait().to_vector<double>(), reference(g, 300, DType::kFloat64, ReduceOp::kSum),
               1e-13, "iall_reduce");
  EXPECT_TRUE(a.test());  // done: a second wait returns the same result
  EXPECT_EQ(a.wait().numel(), 300);
}

// Nobody leaves a barrier before the last rank has entered it. The ranks share one machine, so
// their steady clocks (CLOCK_MONOTONIC) are one clock: compare every exit with every entry.
TEST(Collectives, BarrierWaitsForTheLastRank) {
  ProcessGroup& g = world();
  auto now_ns = [] {
    return (int64_t)std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  g.barrier();
  if (g.rank() == 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the last to arrive
  const int64_t entered = now_ns();
  g.barrier();
  const int64_t left = now_ns();
  std::vector<int64_t> mine{entered, left};
  const std::vector<int64_t> all = g.all_gather(Tensor::from_vector(mine)).to_vector<int64_t>();
  int64_t last_entry = 0;
  for (int r = 0; r < g.size(); ++r) last_entry = std::max(last_entry, all[2 * r]);
  for (int r = 0; r < g.size(); ++r)
    EXPECT_GE(all[2 * r + 1], last_entry)
        << "rank " << r << " left the barrier before the last rank entered it";
}

TEST(Collectives, BadCallsAreTypedErrorsOnEveryRank) {
  ProcessGroup& g = world();
  Tensor flags = Tensor::from_vector<uint8_t>({1, 0}, Shape{2});
  try {
    g.all_reduce(cast(flags, DType::kBool));
    FAIL() << "bool all_reduce";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
  }
  try {
    g.all_reduce(Tensor::from_vector<int64_t>({1, 2}), ReduceOp::kMean);
    FAIL() << "integer mean";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDType);
  }
  try {
    g.reduce_scatter(zeros({g.size() * 2 + 1}));
    FAIL() << "uneven reduce_scatter";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShape);
  }
  try {
    g.broadcast(zeros({2}), g.size());
    FAIL() << "root out of range";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
  }
  // The group still works after refused calls (none reached the backend).
  EXPECT_EQ(g.all_reduce(Tensor::from_vector<int32_t>({1})).to_vector<int32_t>()[0], g.size());
}

// The debug check: ranks that call different collectives (or shapes) at the same point all get
// kValue naming every rank's call, instead of MPI pairing the wrong calls.
TEST(Collectives, OrderCheckNamesMismatchedCalls) {
  ProcessGroup& g = world();
  const bool saved = g.check_order();
  g.set_check_order(true);
  auto expect_mismatch = [&](const std::function<void()>& call, const char* what) {
    try {
      call();
      ADD_FAILURE() << what << ": no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kValue) << e.what();
      EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("different collectives"), std::string::npos) << e.what();
    }
  };
  expect_mismatch([&] { g.all_reduce(zeros({g.rank() == 0 ? 3 : 4})); }, "shape");
  expect_mismatch(
      [&] {
        if (g.rank() == 0)
          g.broadcast(zeros({4}), 0);
        else
          g.all_reduce(zeros({4}));
      },
      "collective");
  // Matching calls pass the check and run.
  EXPECT_EQ(g.all_reduce(Tensor::from_vector<int32_t>({2})).to_vector<int32_t>()[0], 2 * g.size());
  g.set_check_order(saved);
}

}  // namespace
}  // namespace spore::dist
