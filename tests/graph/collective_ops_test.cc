// The collective ops in one process (NOTE [Collective ops]): without spore::dist the process is a
// group of one, and the graph passes treat every collective as a call the other processes match:
// never folded, merged or dropped. (The same ops across processes: tests/dist/collective_ops_mpi.cc.)
#include <gtest/gtest.h>

#include "spore/collective.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace spore {
namespace {

Tensor all_reduce_sum(const Tensor& x) {
  return dispatch1(OpId::k_all_reduce, {x}, Attrs::of(int64_t{0}, false));
}

int count_collectives(const graph::Graph& g) {
  int n = 0;
  for (size_t i = 0; i < g.num_nodes(); ++i) n += g.node((int)i).def->facts.collective;
  return n;
}

TEST(CollectiveOps, AGroupOfOneCopiesAndChecksTheNodesGroup) {
  ASSERT_EQ(collective_runtime(), nullptr);
  EXPECT_EQ(collective_size(), 1);
  const Tensor x = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f, 0.5f}, Shape{2, 2});
  EXPECT_EQ(all_reduce_sum(x).to_vector<float>(), x.to_vector<float>());
  // The shape rule follows the node's group size; the kernel refuses a size this job does not have.
  const OpDef& ag = op_def(OpId::k_all_gather);
  Attrs two = Attrs::of(int64_t{2});
  Inference inf;
  std::vector<Tensor> in{x};
  ag.infer(InferArgs{ag, in, two}, inf);
  EXPECT_EQ(inf.outputs[0].shape, (Shape{4, 2}));
  try {
    dispatch1(OpId::k_all_gather, {x}, two);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("dist::init"), std::string::npos) << e.what();
  }
  EXPECT_THROW(dispatch1(OpId::k_reduce_scatter, {x}, Attrs::of(int64_t{0}, int64_t{3})), Error);  // 2 % 3
  EXPECT_THROW(all_reduce_sum(cast(Tensor::from_vector<float>({1.0f}, Shape{1}), DType::kBool)), Error);
  EXPECT_THROW(dispatch1(OpId::k_all_reduce, {Tensor::from_vector<int32_t>({1}, Shape{1})}, Attrs::of(int64_t{1}, false)),
               Error);  // the mean of integers
}

// Folding an all_reduce of a constant, merging two identical ones, or dropping one whose result
// is unused would change how many collectives this process makes, and the others would wait for
// the missing call (or pair the wrong ones).
TEST(CollectiveOps, PassesKeepEveryCollective) {
  JitFunction f = jit(TensorFn([](const std::vector<Tensor>& in) {
    Tensor folded = all_reduce_sum(full({2}, 1.0));  // fill folds to a constant; this must not
    Tensor a = all_reduce_sum(in[0]), b = all_reduce_sum(in[0]);  // the same expression twice
    (void)all_reduce_sum(mul(in[0], 3.0));       // unused
    (void)dispatch1(OpId::k_barrier, {in[0]});  // unused
    return add(add(a, b), folded);
  }));
  const Tensor x = Tensor::from_vector<float>({0.5f, 4.0f}, Shape{2});
  f.call1({x});
  EXPECT_EQ(f.call1({x}).to_vector<float>(), (std::vector<float>{2.0f, 9.0f}));
  ASSERT_NE(f.last_graph(), nullptr);
  EXPECT_EQ(count_collectives(*f.last_graph()), 5);
  bool ran_passes = false;
  for (const graph::PassStats& p : f.stats().last_passes) ran_passes |= p.pass == "fold";
  EXPECT_TRUE(ran_passes);
}

}  // namespace
}  // namespace spore
