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
