// Conformance: every registry op, on its sample inputs (NOTE [Sample inputs]) in every dtype its
// factory covers, run eagerly and as a compiled graph (a trace, then the executor with its memory
// plan) gives bitwise equal results, and writes its in-place inputs identically.
#include <gtest/gtest.h>

#include <iterator>

#include "probe/op_matrix_factories.h"
#include "spore/jit.h"
#include "spore/op_registry.h"

namespace spore {
namespace {

std::vector<uint8_t> bytes_of(const Tensor& t) { return t.contiguous().to_bytes(); }

// Whether an eager run dispatched the op (a cast to the dtype a tensor already has is no call).
struct Saw final : DispatchObserver {
  explicit Saw(const OpDef& d) : def(&d) {}
  void on_op(const OpDef& d, std::span<const Tensor>, const Attrs&, std::span<const Tensor>) override {
    seen |= &d == def;
  }
  const OpDef* def;
  bool seen = false;
};

std::vector<Tensor> clones(const std::vector<Tensor>& in) {
  std::vector<Tensor> out;
  for (const Tensor& t : in) out.push_back(t.clone());
  return out;
}

TEST(OpParity, EveryRegistryOpCompiledEqualsEagerBitwise) {
  int compared = 0, in_place = 0, with_subgraphs = 0;
  for (const OpDef& d : all_ops()) {
    if (d.num_subgraphs) {  // while_loop: eager against compiled in tests/graph/while_loop_test.cc
      ++with_subgraphs;
      continue;
    }
    const probe::OpFactory* f = probe::op_factory(d.id);
    ASSERT_NE(f, nullptr) << d.name;
    int cases = 0;
    for (DType t : kAllDTypes) {
      std::optional<probe::OpCase> c;
      try {
        c = (*f)(t);
      } catch (const Error&) {
        continue;  // the sample cannot be built in this dtype
      }
      if (!c) continue;
      std::vector<Tensor> eager_in = clones(c->inputs);
      Tensor eager;
      Saw saw(d);
      try {
        DispatchObserverGuard guard(&saw);
        eager = c->run(eager_in, false);
      } catch (const Error&) {
        continue;  // no kernel for this dtype: nothing to compare
      }
      if (!eager.defined()) continue;
      // The one-node graph unoptimised (the node must be the op itself); the graph over
      // intermediates below goes through the passes too, so fusion is held to the same bytes.
      JitOptions one_node;
      one_node.optimize = false;
      JitFunction fn = jit(TensorFn([&](const std::vector<Tensor>& in) { return c->run(in, false); }), one_node);
      std::vector<Tensor> trace_in = clones(c->inputs), run_in = clones(c->inputs);
      Tensor traced = fn.call1(trace_in);
      Tensor compiled = fn.call1(run_in);
      ASSERT_EQ(fn.stats().hits, 1) << d.name << " " << dtype_name(t);
      EXPECT_EQ(bytes_of(traced), bytes_of(eager)) << d.name << " " << dtype_name(t) << " (trace)";
      EXPECT_EQ(compiled.dtype(), eager.dtype()) << d.name;
      EXPECT_EQ(compiled.shape(), eager.shape()) << d.name;
      EXPECT_EQ(bytes_of(compiled), bytes_of(eager)) << d.name << " " << dtype_name(t) << " (compiled)";
      for (size_t i = 0; i < eager_in.size(); ++i)
        EXPECT_EQ(bytes_of(run_in[i]), bytes_of(eager_in[i])) << d.name << " " << dtype_name(t) << " input " << i;
      // The same with the op reading intermediates (copies made inside the graph) that die
      // there: the memory plan writes elementwise outputs over them (NOTE [Memory planning]),
      // and the graph's later nodes write into planned buffers.
      JitFunction over = jit(TensorFn([&](const std::vector<Tensor>& in) {
        bool writes = d.writes_mask != 0;
        std::vector<Tensor> copies;
        for (const Tensor& x : in) copies.push_back(writes ? x : x.clone());
        return c->run(copies, false).clone();  // the op's result is an intermediate too
      }));
      std::vector<Tensor> over_in = clones(c->inputs);
      over.call1(clones(c->inputs));
      Tensor reused = over.call1(over_in);
      EXPECT_EQ(bytes_of(reused), bytes_of(eager)) << d.name << " " << dtype_name(t) << " (over intermediates)";
      in_place += over.stats().in_place;
      bool has_op = false;
      for (const Node& n : fn.last_graph()->nodes()) has_op |= n.def == &d;
      EXPECT_EQ(has_op, saw.seen) << d.name << " " << dtype_name(t) << ": the compiled graph and eager differ in running the op";
      cases += saw.seen;
    }
    EXPECT_GT(cases, 0) << d.name << ": no dtype compared";
    compared += cases > 0;
  }
  EXPECT_EQ(compared + with_subgraphs, (int)all_ops().size());
  EXPECT_GT(in_place, 20);  // the in-place path was exercised
}

}  // namespace
}  // namespace spore
