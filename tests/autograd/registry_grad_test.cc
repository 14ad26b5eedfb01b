// Every op the registry declares differentiable passes a numeric Jacobian check on its sample
// inputs (NOTE [Sample inputs]), in float64: no separate list of ops to keep in step.
#include <gtest/gtest.h>

#include "autograd/gradcheck.h"
#include "probe/op_matrix_factories.h"
#include "spore/op_registry.h"

namespace spore {
namespace {

// The samples' values are exact multiples of 1/4 (chosen for the capability matrix), so they sit
// on kinks (relu at 0) and ties (maximum, max pooling). Moving each element by a different,
// non-dyadic amount keeps them inside each op's domain and away from the points where the
// derivative is a convention rather than a limit.
Tensor off_the_kinks(const Tensor& x, int which) {
  std::vector<double> v = x.contiguous().to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] += 0.1 + 0.013 * which + 0.0007 * (double)i;
  return Tensor::from_vector(v, x.shape());
}

TEST(RegistryGrad, EveryDifferentiableOpMatchesFiniteDifferences) {
  int checked = 0;
  for (const OpDef& d : all_ops()) {
    if (!d.differentiable) continue;
    SCOPED_TRACE(d.name);
    const probe::OpFactory* f = probe::op_factory(d.id);
    ASSERT_NE(f, nullptr) << "no sample input";
    std::optional<probe::OpCase> c = (*f)(DType::kFloat64);
    ASSERT_TRUE(c.has_value()) << "no float64 sample";
    std::vector<Tensor> in = c->ref_inputs;
    std::vector<int> positions;
    for (int i = 0; i < (int)in.size(); ++i) {
      if (in[i].dtype() != DType::kFloat64) continue;
      in[i] = off_the_kinks(in[i], i);
      positions.push_back(i);
    }
    ASSERT_FALSE(positions.empty()) << "a differentiable op's sample has no floating input";
    auto run = c->run;
    test::gradcheck([run](const std::vector<Tensor>& xs) { return run(xs, true); }, in, positions, 1e-6, 1e-6,
                    d.name);
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

}  // namespace
}  // namespace spore
