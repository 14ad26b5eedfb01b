// The op layer's side of NOTE [Core hooks]: Tensor's copy, cast and in-place write, as ops.
#include "../core/tensor_ops_hooks.h"
#include "op_families.h"
#include "spore/ops.h"

namespace spore::ops {

namespace {
Tensor copy_hook(const Tensor& src) { return dispatch1(OpId::k_copy, {src}); }
Tensor cast_hook(const Tensor& src, DType dtype) { return cast(src, dtype); }

// Tensor::copy_: the value is brought to dst's device, dtype and shape here, then written by the
// `assign` op, which declares that it writes input 0 so that observers and passes know.
void assign_hook(const Tensor& dst, const Tensor& src) {
  Tensor value = src;
  if (value.device() != dst.device()) value = value.to(dst.device());
  if (value.dtype() != dst.dtype()) value = cast(value, dst.dtype());
  if (value.shape() != dst.shape()) value = expand(value, dst.shape().to_vector());
  dispatch(OpId::k_assign, std::initializer_list<Tensor>{dst, value});
}

// Installed before main (this file is linked whenever the registry is, see install below).
[[maybe_unused]] const bool g_installed = (install_tensor_hooks(), true);
}  // namespace

void install_tensor_hooks() {
  TensorOpHooks h;
  h.copy = &copy_hook;
  h.cast = &cast_hook;
  h.assign = &assign_hook;
  set_tensor_op_hooks(h);
}

}  // namespace spore::ops
