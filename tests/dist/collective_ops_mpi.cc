// The collectives as registry ops on 2 and 4 ranks (NOTE [Collective ops]): values, gradients
// through the tape, and a jit-compiled function, against references every rank computes for
// itself from the known inputs of every rank.
#include <gtest/gtest.h>

#include <cmath>

#include "spore/autograd.h"
#include "spore/collective.h"
#include "spore/dist.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace spore::dist {
namespace {

// Rank r's input at index i (exact in float32: multiples of 1/8; the ranks' ranges do not overlap,
// so the last rank holds every maximum), and its loss weights.
double xv(int r, int64_t i) { return (double)((i * 7 + r * 5) % 13 - 6) / 8.0 + 2.0 * r; }
double wv(int r, int64_t i) { return (double)((i * 3 + r * 11) % 7 + 1) / 4.0; }

Tensor tensor_of(int r, int64_t n, double (*f)(int, int64_t)) {
  std::vector<float> v((size_t)n);
  for (int64_t i = 0; i < n; ++i) v[(size_t)i] = (float)f(r, i);
  return Tensor::from_vector(v, Shape{n});
}

std::vector<double> as_doubles(const Tensor& t) {
  return cast(t, DType::kFloat64).to_vector<double>();
}

// d/dx of sum(w_rank * op(x)) on this rank.
std::vector<double> grad_of(const std::function<Tensor(const Tensor&)>& op, const Tensor& x,
                            const Tensor& w) {
  auto vg = value_and_grad([&](const std::vector<Tensor>& in) { return sum(mul(op(in[0]), w)); });
  return as_doubles(vg({x}).input_grads[0]);
}

TEST(CollectiveOps, ValuesAgainstEveryRanksInputs) {
  const int n = get_group_size(), me = get_rank();
  const int64_t len = 4 * n;
  const Tensor x = tensor_of(me, len, xv);
  std::vector<double> sum_ref(len, 0), max_ref(len, -INFINITY), gathered;
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < len; ++i) {
      sum_ref[i] += xv(r, i);
      max_ref[i] = std::max(max_ref[i], xv(r, i));
      gathered.push_back(xv(r, i));
    }
  std::vector<double> mean_ref = sum_ref;
  for (double& v : mean_ref) v /= n;
  EXPECT_EQ(as_doubles(all_reduce(x, ReduceOp::kSum)), sum_ref);  // exact: small multiples of 1/8
  EXPECT_EQ(as_doubles(all_reduce(x, ReduceOp::kMax)), max_ref);
  EXPECT_EQ(as_doubles(all_reduce(x, ReduceOp::kSum, true)), sum_ref);
  const std::vector<double> mean = as_doubles(all_reduce(x, ReduceOp::kMean));
  for (int64_t i = 0; i < len; ++i) EXPECT_NEAR(mean[i], mean_ref[i], 1e-6);
  EXPECT_EQ(as_doubles(broadcast(x, n - 1)), as_doubles(tensor_of(n - 1, len, xv)));
  EXPECT_EQ(as_doubles(all_gather(x)), gathered);
  const std::vector<double> scattered = as_doubles(reduce_scatter(x, ReduceOp::kSum));
  ASSERT_EQ(scattered.size(), 4u);
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(scattered[i], sum_ref[me * 4 + i]);
  EXPECT_EQ(as_doubles(barrier(x)), as_doubles(x));
}

TEST(CollectiveOps, GradientsThroughTheTape) {
  const int n = get_group_size(), me = get_rank();
  const int64_t len = 2 * n;
  const Tensor x = tensor_of(me, len, xv), w = tensor_of(me, len, wv);
  std::vector<double> wsum(len, 0);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < len; ++i) wsum[i] += wv(r, i);
  // all_reduce sum: every rank's weights reach every rank's input.
  EXPECT_EQ(grad_of([](const Tensor& t) { return all_reduce(t, ReduceOp::kSum); }, x, w), wsum);
  std::vector<double> wmean = wsum;
  for (double& v : wmean) v /= n;
  const std::vector<double> gm = grad_of([](const Tensor& t) { return all_reduce(t, ReduceOp::kMean); }, x, w);
  for (int64_t i = 0; i < len; ++i) EXPECT_NEAR(gm[i], wmean[i], 1e-6);
  // max: xv grows with the rank, so the last rank holds every maximum and gets all the weight.
  const std::vector<double> gx = grad_of([](const Tensor& t) { return all_reduce(t, ReduceOp::kMax); }, x, w);
  EXPECT_EQ(gx, me == n - 1 ? wsum : std::vector<double>(len, 0.0));
  // broadcast from rank 0: rank 0 gets every rank's weights, the others nothing.
  EXPECT_EQ(grad_of([](const Tensor& t) { return broadcast(t, 0); }, x, w),
            me == 0 ? wsum : std::vector<double>(len, 0.0));
  // all_gather: x's elements sit at block `me` of every rank's output.
  const Tensor wide = tensor_of(me, len * n, wv);
  std::vector<double> want_ag(len, 0);
  for (int r = 0; r < n; ++r)
    for (int64_t i = 0; i < len; ++i) want_ag[i] += wv(r, me * len + i);
  EXPECT_EQ(grad_of([](const Tensor& t) { return all_gather(t); }, x, wide), want_ag);
  // reduce_scatter sum: block k of x feeds rank k's output, weighted by rank k's weights.
  const Tensor narrow = tensor_of(me, len / n, wv);
  std::vector<double> want_rs;
  for (int k = 0; k < n; ++k)
    for (int64_t i = 0; i < len / n; ++i) want_rs.push_back(wv(k, i));
  EXPECT_EQ(grad_of([](const Tensor& t) { return reduce_scatter(t, ReduceOp::kSum); }, x, narrow), want_rs);
}

// A function of collectives compiled by jit: the nodes are in the graph and every compiled call
// communicates (each call's input differs; a replayed constant would not follow it).
TEST(CollectiveOps, CompiledFunctionRunsTheCollectivesEachCall) {
  const int n = get_group_size(), me = get_rank();
  JitFunction f = jit(TensorFn([](const std::vector<Tensor>& in) {
    return all_gather(mul(all_reduce(in[0], ReduceOp::kSum), 2.0));
  }));
  for (int call = 0; call < 3; ++call) {
    const Tensor x = add(tensor_of(me, 3, xv), (double)call);
    std::vector<double> want;
    for (int r = 0; r < n; ++r)
      for (int64_t i = 0; i < 3; ++i) {
        double s = 0;
        for (int q = 0; q < n; ++q) s += xv(q, i) + call;
        want.push_back(2 * s);
      }
    EXPECT_EQ(as_doubles(f.call1({x})), want) << "call " << call;
  }
  EXPECT_EQ(f.stats().hits, 2);
  int collectives = 0;
  for (size_t i = 0; i < f.last_graph()->num_nodes(); ++i)
    collectives += f.last_graph()->node((int)i).def->facts.collective;
  EXPECT_EQ(collectives, 2);
}

// A node built for another group size (a graph traced under another launcher) is refused by
// name before any rank communicates.
TEST(CollectiveOps, NodeForAnotherGroupSizeIsRefused) {
  const int n = get_group_size();
  const Tensor x = tensor_of(get_rank(), 2 * (n + 1), xv);
  try {
    dispatch1(OpId::k_all_gather, {x}, Attrs::of(int64_t{n + 1}));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("group of " + std::to_string(n + 1)), std::string::npos) << e.what();
  }
  EXPECT_THROW(broadcast(x, n), Error);  // a root outside the group
  world().barrier();                     // no rank started a collective
}

}  // namespace
}  // namespace spore::dist
