// NOTE [Sample inputs]
// Sample inputs for every op of the registry: a small factory per op, indexed by its OpId, that
// builds inputs of one dtype (and their float64 twins for the CPU reference) and calls the op
// through the public API. One table serves the capability matrix, the registry-wide tests
// (tests/core/op_coverage_test.cc: every op has a factory, runs it, and leaves the inputs it does
// not declare written unchanged) and the gradient check of every differentiable op
// (tests/autograd/registry_grad_test.cc), so an op added without a sample fails a test.
#pragma once
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "spore/op_list.h"
#include "spore/tensor.h"

namespace spore::probe {

struct OpCase {
  std::vector<Tensor> inputs;      // in the cell's dtype (index tensors stay int64), on the CPU
  std::vector<Tensor> ref_inputs;  // the same values in float64 for the reference
  // Calls the op; `reference` is true for the float64 CPU reference run.
  std::function<Tensor(const std::vector<Tensor>&, bool reference)> run;
  // True when the reference is already what the result dtype must hold (random ops, whose
  // reference is the CPU in the same dtype); otherwise it is rounded to the result dtype.
  bool exact_reference = false;
};
// nullopt: the op has no case for that dtype (reported not-run).
using OpFactory = std::function<std::optional<OpCase>(DType)>;

const OpFactory* op_factory(OpId id);               // nullptr: the op has no factory
const OpFactory* find_op_factory(std::string_view op);  // by the op's registry name

}  // namespace spore::probe
