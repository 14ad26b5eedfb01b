// The registry is complete and self-consistent: every listed op is defined, names are unique,
// every non-view op has at least one CPU kernel, and attribute checks happen at dispatch.
#include <gtest/gtest.h>

#include <set>

#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {
namespace {

TEST(Registry, EveryListedOpIsDefined) {
  std::set<std::string> names;
  for (const OpDef& d : all_ops()) {
    SCOPED_TRACE(d.name);
    EXPECT_TRUE(names.insert(d.name).second) << "duplicate op name";
    EXPECT_EQ(&op_def(d.id), &d);
    EXPECT_EQ(find_op(d.name), &d);
    if (!d.view && !d.num_subgraphs) {  // a node with subgraphs runs them, not a kernel
      EXPECT_FALSE(d.supported_dtypes(kCpuBackend).empty()) << "no CPU kernel";
    }
  }
  EXPECT_EQ((int)all_ops().size(), kNumOps);
  EXPECT_EQ(find_op("no_such_op"), nullptr);
}

// NOTE [Op facts]: every op declares every fact on its row, so a new op cannot silently miss
// the fusion pass, the memory plan or the ONNX mapping; and the facts agree with the row's shape.
TEST(Registry, EveryOpDeclaresItsFacts) {
  std::set<std::string> onnx_names;
  int in_place = 0, fusable = 0, onnx = 0;
  for (const OpDef& d : all_ops()) {
    SCOPED_TRACE(d.name);
    const OpFacts& f = d.facts;
    EXPECT_NE(f.fusion, Fusion::kUndeclared) << "declare facts.fusion (kNone when the fused kernel does not run it)";
    EXPECT_NE(f.in_place, InPlace::kUndeclared) << "declare facts.in_place";
    ASSERT_NE(f.onnx, nullptr) << "declare facts.onnx (\"\" when no ONNX op maps one to one)";
    if (f.fusion != Fusion::kNone && f.fusion != Fusion::kUndeclared) {
      ++fusable;
      EXPECT_EQ(d.num_inputs, fusion_arity(f.fusion)) << "the fusion kind's operands";
      EXPECT_EQ(d.writes_mask, 0u) << "a fused op writes nothing in place";
      EXPECT_EQ(d.num_subgraphs, 0);
    }
    if (f.in_place == InPlace::kYes) {
      ++in_place;
      // Only a kernel computed element by element from its inputs can overwrite one of them.
      EXPECT_TRUE(f.fusion == Fusion::kArith || f.fusion == Fusion::kUnaryFloat || f.fusion == Fusion::kUnaryKeep);
      EXPECT_EQ(d.view, nullptr);
    }
    if (*f.onnx) {
      ++onnx;
      EXPECT_TRUE(onnx_names.insert(f.onnx).second) << "two ops name the ONNX op " << f.onnx;
      EXPECT_TRUE(d.attrs.empty()) << "a one-to-one ONNX op takes no attributes";
    }
    if (f.right_identity || f.left_identity) {
      EXPECT_EQ(d.num_inputs, 2);
    }
    if (f.involution) {
      EXPECT_EQ(d.num_inputs, 1);
    }
  }
  // Positive controls: the facts are there at all.
  EXPECT_GE(in_place, 20);
  EXPECT_GE(fusable, 30);
  EXPECT_GE(onnx, 20);
  // The answer to issue 26's question: gelu runs the same unary loop as silu.
  EXPECT_EQ(op_def(OpId::k_gelu).facts.in_place, InPlace::kYes);
  EXPECT_EQ(op_def(OpId::k_silu).facts.in_place, InPlace::kYes);
}

TEST(Registry, UndefinedProbeOfAnOpDefinitionFailsCleanly) {
  // Wrong arity and wrong attribute kinds are reported at dispatch, naming the op.
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  try {
    dispatch(OpId::k_add, std::vector<Tensor>{a});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos);
  }
  try {
    dispatch(OpId::k_cast, std::vector<Tensor>{a}, Attrs{int64_t{3}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kValue);
    EXPECT_NE(std::string(e.what()).find("cast"), std::string::npos);
  }
  EXPECT_THROW(add(Tensor(), a), Error);
}

TEST(Registry, ObserverSeesEveryDispatchedOp) {
  struct Counter : DispatchObserver {
    std::vector<std::string> seen;
    void on_op(const OpDef& d, std::span<const Tensor>, const Attrs&, std::span<const Tensor> outs) override {
      seen.push_back(d.name);
      EXPECT_EQ(outs.size(), 1u);
    }
  } counter;
  Tensor a = Tensor::from_vector<float>({1, 2}, Shape{2});
  {
    DispatchObserverGuard guard(&counter);
    Tensor c = mul(add(a, a), a);
  }
  EXPECT_EQ(counter.seen, (std::vector<std::string>{"add", "mul"}));
}

}  // namespace
}  // namespace spore
