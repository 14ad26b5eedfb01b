// Public API of the norm family (include/spore/ops.h).
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor softmax(const Tensor& x, int64_t axis) { return dispatch1(OpId::k_softmax, {x}, Attrs{axis}); }
Tensor log_softmax(const Tensor& x, int64_t axis) {
  return dispatch1(OpId::k_log_softmax, {x}, Attrs{axis});
}

}  // namespace spore
