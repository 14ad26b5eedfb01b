// Inputs for the capability matrix: a small factory per op, keyed by the op's name, that builds
// inputs of one dtype (and their float64 twins for the CPU reference) and calls the op through
// the public API. An op without a factory shows as not-run in the matrix, with that reason.
#pragma once
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

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

const OpFactory* find_op_factory(std::string_view op);

}  // namespace spore::probe
