// Public API of the index family (include/spore/ops.h); NOTE [Index checks] in src/ops/index.cc.
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor gather(const Tensor& x, int64_t axis, const Tensor& index) {
  return dispatch1(OpId::k_gather, {x, index}, Attrs{axis});
}

Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index) {
  return dispatch1(OpId::k_index_select, {x, index}, Attrs{axis});
}

Tensor embedding(const Tensor& ids, const Tensor& table) {
  return dispatch1(OpId::k_embedding, {ids, table});
}

Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::k_scatter_add, {x, index, src}, Attrs{axis});
}

}  // namespace spore
