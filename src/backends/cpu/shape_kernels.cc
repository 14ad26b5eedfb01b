// CPU kernels of the shape family. Only concat has one: reshape, permute, slice and expand are
// views (src/ops/shape.cc) and move no data.
#include "cpu_kernels.h"
#include "shape_walk.h"

namespace spore::cpu {

namespace {
// Each input is copied into its block of the (contiguous) output, which is itself a strided
// view: same strides as the output, offset by the extents of the inputs before it. The copy
// only depends on the element size, so one kernel serves every dtype.
void concat_kernel(const KernelCall& call) {
  const Tensor& out = call.outputs[0];
  const int axis = normalize_axis(call.attrs.i(0), out.ndim(), call.def.name);
  const size_t elem = out.itemsize();
  char* base = static_cast<char*>(out.data_ptr());
  int64_t at = 0;
  for (const Tensor& x : call.inputs) {
    strided_copy(x.data_ptr(), x.strides(), base + at * out.strides()[axis] * (int64_t)elem,
                 out.strides(), x.shape(), elem);
    at += x.shape()[axis];
  }
}
}  // namespace

void register_shape_kernels() {
  for (DType t : kAllDTypes) register_kernel(OpId::k_concat, kCpuBackend, t, &concat_kernel);
}

}  // namespace spore::cpu
