// CPU kernel of slice_scatter (src/ops/shape.cc): x copied into the output, then src copied over
// the slice. Both copies are strided block copies that only care about the element size, so one
// kernel serves every dtype and any input layout.
#include "../../ops/shape_rules.h"
#include "cpu_kernels.h"
#include "shape_walk.h"

namespace spore::cpu {

namespace {
void slice_scatter_kernel(const KernelCall& call) {
  const Tensor& x = call.inputs[0];
  const Tensor& src = call.inputs[1];
  const Tensor& out = call.outputs[0];
  const size_t elem = out.itemsize();
  ops::SliceRange r = ops::resolve_slice(call.def, x.shape(), call.attrs.i(0), call.attrs.i(1),
                                         call.attrs.i(2), call.attrs.i(3));
  strided_copy(x.data_ptr(), x.strides(), out.data_ptr(), out.strides(), x.shape(), elem);
  if (r.length == 0) return;
  // The slice of the (contiguous) output, as slice()'s view would address it.
  Shape st = out.strides();
  char* at = static_cast<char*>(out.data_ptr()) + r.start * st[r.axis] * (int64_t)elem;
  if (r.length > 1) st[r.axis] *= r.step;  // as view_slice: no overflow for a huge step
  strided_copy(src.data_ptr(), src.strides(), at, st, src.shape(), elem);
}
}  // namespace

void register_scatter_kernels() {
  for (DType t : kAllDTypes)
    register_kernel(OpId::k_slice_scatter, kCpuBackend, t, &slice_scatter_kernel);
}

}  // namespace spore::cpu
