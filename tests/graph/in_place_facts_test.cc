// NOTE [Op facts], NOTE [Memory planning]: every op whose registry row says it may run in place
// is planned over the dying input's buffer, and gives eager mode's bytes there; ops that say no
// are not.
#include <gtest/gtest.h>

#include "spore/jit.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

std::vector<uint8_t> bytes_of(const Tensor& t) { return t.contiguous().to_bytes(); }

// op(exp(x)) or op(exp(x), y): exp's result is an intermediate whose last reader is the op (whose
// result is an intermediate too, copied out: a graph output is never planned).
Tensor chain(const OpDef& d, const std::vector<Tensor>& in) {
  const Tensor e = exp(in[0]);
  if (d.num_inputs == 1) return dispatch1(d.id, {e});
  return dispatch1(d.id, {e, in[1]});
}

TEST(InPlaceFacts, EveryOpDeclaredInPlaceIsPlannedInPlace) {
  const Tensor x = Tensor::from_vector<float>({0.1f, 0.25f, 0.5f, 0.75f, 0.9f, 0.3f}, Shape{2, 3});
  const Tensor y = Tensor::from_vector<float>({0.5f, 1.5f, 1.25f, 0.75f, 1.0f, 2.0f}, Shape{2, 3});
  int checked = 0;
  for (const OpDef& d : all_ops()) {
    if (d.facts.fusion == Fusion::kNone || d.num_inputs < 1 || d.num_inputs > 2) continue;
    if (d.facts.fusion == Fusion::kCompare || d.facts.fusion == Fusion::kLogical ||
        d.facts.fusion == Fusion::kLogicalNot || d.facts.fusion == Fusion::kCast)
      continue;  // bool operands or results, or an attribute: no plain float chain to build
    SCOPED_TRACE(d.name);
    JitOptions o;
    o.optimize = false;  // fusion would fold exp and the op into one node
    JitFunction f = jit(TensorFn([&d](const std::vector<Tensor>& in) { return chain(d, in).clone(); }), o);
    const std::vector<Tensor> inputs = d.num_inputs == 1 ? std::vector<Tensor>{x} : std::vector<Tensor>{x, y};
    const Tensor eager = chain(d, inputs);
    f.call1(inputs);
    const Tensor compiled = f.call1(inputs);
    EXPECT_EQ(bytes_of(compiled), bytes_of(eager));
    if (d.facts.in_place == InPlace::kYes) {
      EXPECT_EQ(f.stats().in_place, 1) << "the row says in place, the memory plan did not";
      ++checked;
    } else {
      EXPECT_EQ(f.stats().in_place, 0);
    }
  }
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace spore
