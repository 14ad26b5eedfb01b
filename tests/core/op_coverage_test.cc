// Registry-wide checks (NOTE [Declared effects], NOTE [Sample inputs]): every op of the registry
// has sample inputs that run it, a backward rule exactly when it is declared differentiable, and
// writes no input it does not declare. Adding an op without these fails here, not in a user's run.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <optional>
#include <vector>

#include "probe/op_matrix_factories.h"
#include "spore/op_registry.h"

namespace spore {
namespace {

// Records the input tensors of every dispatch of one op.
struct InputsOf final : DispatchObserver {
  explicit InputsOf(OpId id) : id(id) {}
  void on_op(const OpDef& d, std::span<const Tensor> inputs, const Attrs&, std::span<const Tensor>) override {
    if (d.id != id) return;
    ++calls;
    seen.assign(inputs.begin(), inputs.end());
  }
  OpId id;
  int calls = 0;
  std::vector<Tensor> seen;
};

std::vector<uint8_t> bytes_of(const Tensor& t) { return t.contiguous().to_bytes(); }

// One run of an op's sample: the inputs' bytes before, and what the op was called with.
struct SampleRun {
  std::map<const TensorImpl*, std::vector<uint8_t>> before;
  std::vector<Tensor> seen;
};

// Runs the op's sample in float32, or else the first dtype whose sample dispatches the op (a
// float32 cast to float32 is no call at all); nullopt when none does.
std::optional<SampleRun> run_sample(const OpDef& d) {
  const probe::OpFactory* f = probe::op_factory(d.id);
  if (!f) return std::nullopt;
  std::vector<DType> order{DType::kFloat32};
  order.insert(order.end(), std::begin(kAllDTypes), std::end(kAllDTypes));
  for (DType t : order) {
    std::optional<probe::OpCase> c = (*f)(t);
    if (!c) continue;
    SampleRun r;
    for (const Tensor& x : c->inputs) r.before[x.impl()] = bytes_of(x);
    InputsOf obs(d.id);
    {
      DispatchObserverGuard guard(&obs);
      if (!c->run(c->inputs, false).defined()) continue;
    }
    if (obs.calls == 0) continue;
    r.seen = std::move(obs.seen);
    return r;
  }
  return std::nullopt;
}

TEST(OpCoverage, EveryOpHasASampleThatRunsIt) {
  for (const OpDef& d : all_ops()) {
    SCOPED_TRACE(d.name);
    // Ops with subgraphs (while_loop) have no kernel to sample: tests/graph/while_loop_test.cc
    // runs them eagerly and compiled.
    if (d.num_subgraphs) continue;
    EXPECT_NE(probe::op_factory(d.id), nullptr)
        << "no sample input: add a factory to src/probe/op_matrix_factories.cc";
    EXPECT_TRUE(run_sample(d).has_value()) << "no dtype's sample dispatches " << d.name;
  }
}

TEST(OpCoverage, DifferentiableExactlyWhenThereIsARule) {
  for (const OpDef& d : all_ops()) {
    SCOPED_TRACE(d.name);
    if (d.differentiable) {
      EXPECT_NE(d.backward, nullptr) << "declared differentiable but has no backward rule";
    } else {
      EXPECT_EQ(d.backward, nullptr) << "has a backward rule but is declared not differentiable";
    }
    // An op that writes an input in place cannot be differentiated by a tape that keys tensors
    // by identity.
    if (d.writes_mask) {
      EXPECT_FALSE(d.differentiable);
    }
    if (d.num_inputs >= 0 && d.num_inputs < 32) {
      EXPECT_EQ(d.writes_mask >> d.num_inputs, 0u) << "declares a write to an input it does not have";
    }
  }
}

TEST(OpCoverage, OpsWriteOnlyTheInputsTheyDeclare) {
  int writers = 0;
  for (const OpDef& d : all_ops()) {
    SCOPED_TRACE(d.name);
    if (d.num_subgraphs) continue;  // no kernel, no sample (tests/graph/while_loop_test.cc)
    std::optional<SampleRun> r = run_sample(d);
    ASSERT_TRUE(r.has_value());
    bool wrote_any = false;
    for (size_t i = 0; i < r->seen.size(); ++i) {
      auto it = r->before.find(r->seen[i].impl());
      if (it == r->before.end()) continue;  // made inside the sample (a cast), not one of its inputs
      bool changed = bytes_of(r->seen[i]) != it->second;
      if (d.writes((int)i)) {
        wrote_any |= changed;
      } else {
        EXPECT_FALSE(changed) << "input " << i << " changed but " << d.name
                              << " does not declare the write (OpDef::writes_mask)";
      }
    }
    if (d.writes_mask) {
      EXPECT_TRUE(wrote_any) << "declares a write its sample never shows";
      ++writers;
    }
  }
  EXPECT_GE(writers, 3);  // sgd_update, adam_update, assign
}

}  // namespace
}  // namespace spore
