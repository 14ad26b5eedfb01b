// Graph::insert_node, the one addition the passes made to the Graph container: the new node goes
// before `position`, the nodes after it move up, and every producer index stays consistent.
#include <gtest/gtest.h>

#include "graph_eval.h"
#include "test_util.h"

namespace spore::graph {
namespace {
using test::Builder;

TEST(GraphInsertNode, PutsTheNodeBeforePositionAndKeepsProducers) {
  Builder b;
  ValueId x = b.input(full({3}, 2.0));
  ValueId e = b.node(OpId::k_exp, {x});
  ValueId n = b.node(OpId::k_neg, {e});
  b.outputs({n});
  const TensorMeta meta[] = {b.g.value(x).meta};
  const ValueId args[] = {x, x};
  const int at = b.g.insert_node(1, op_def(OpId::k_mul), {}, args, meta);
  EXPECT_EQ(at, 1);
  const ValueId sq = b.g.outputs(1)[0];
  b.g.set_input(2, 0, sq);  // neg now reads x * x
  b.g.validate();
  EXPECT_EQ(b.ops(), (std::vector<OpId>{OpId::k_exp, OpId::k_mul, OpId::k_neg}));
  EXPECT_EQ(b.g.value(sq).node, 1);
  EXPECT_EQ(b.g.value(n).node, 2);
  EXPECT_EQ(b.run()[0].to_vector<float>(), (std::vector<float>{-4, -4, -4}));
  // At the end it is add_node; past the end it is an error.
  EXPECT_EQ(b.g.insert_node(3, op_def(OpId::k_mul), {}, args, meta), 3);
  spore::test::expect_error([&] { b.g.insert_node(9, op_def(OpId::k_mul), {}, args, meta); },
                            ErrorCode::kValue, "insert_node at 9");
}

}  // namespace
}  // namespace spore::graph
