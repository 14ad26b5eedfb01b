// cond (NOTE [Control flow]); while_loop is in while_loop.cc.
#include "spore/control_flow.h"

#include "spore/error.h"
#include "spore/jit.h"
#include "spore/ops.h"

namespace spore {

void check_pred(const Tensor& pred, const char* who) {
  if (!pred.defined()) throw Error(ErrorCode::kValue, std::string(who) + ": the predicate is an undefined tensor");
  if (pred.dtype() != DType::kBool)
    throw Error(ErrorCode::kDType, std::string(who) + ": the predicate is " + dtype_name(pred.dtype()) +
                                       "; pass a bool tensor (a comparison such as gt(x, y))");
  if (pred.numel() != 1)
    throw Error(ErrorCode::kShape, std::string(who) + ": the predicate has shape " + pred.shape().str() +
                                       "; it must hold exactly one element (reduce it first, e.g. with sum)");
}

std::vector<Tensor> cond(const Tensor& pred, const BranchFn& then_fn, const BranchFn& else_fn,
                         const std::vector<Tensor>& operands) {
  check_pred(pred, "cond");
  if (!then_fn || !else_fn) throw Error(ErrorCode::kValue, "cond: a branch function is empty");
  if (!graph::is_tracing()) return pred.item<uint8_t>() ? then_fn(operands) : else_fn(operands);
  std::vector<Tensor> a = then_fn(operands), b = else_fn(operands);
  if (a.size() != b.size())
    throw Error(ErrorCode::kValue, "cond: the then branch returns " + std::to_string(a.size()) +
                                       " results and the else branch " + std::to_string(b.size()) +
                                       "; both must return the same results");
  std::vector<Tensor> out;
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].shape() != b[i].shape())
      throw Error(ErrorCode::kShape, "cond: result " + std::to_string(i) + " is " + a[i].shape().str() +
                                         " in the then branch and " + b[i].shape().str() + " in the else branch");
    if (a[i].dtype() != b[i].dtype())
      throw Error(ErrorCode::kDType, "cond: result " + std::to_string(i) + " is " + dtype_name(a[i].dtype()) +
                                         " in the then branch and " + dtype_name(b[i].dtype()) + " in the else branch");
    out.push_back(where(pred, a[i], b[i]));
  }
  return out;
}

// while_loop: src/graph/while_loop.cc.

}  // namespace spore
