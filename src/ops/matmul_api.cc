// Public API of the matmul family (include/spore/ops.h).
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor matmul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::k_matmul, {a, b}); }

}  // namespace spore
