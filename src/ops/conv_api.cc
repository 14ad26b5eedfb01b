// Public API of the convolution and pooling family (include/spore/ops.h). Attribute order:
// NOTE [Conv and pool attributes] in conv_geometry.h.
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

namespace {
Attrs conv_attrs(const Conv2dOptions& o) {
  return Attrs{o.stride, o.padding, o.dilation, int64_t{o.groups}};
}
Attrs conv_attrs(const std::vector<int64_t>& shape, const Conv2dOptions& o) {
  return Attrs{shape, o.stride, o.padding, o.dilation, int64_t{o.groups}};
}
Attrs pool_attrs(const Pool2dOptions& o) {
  return Attrs{o.kernel, o.stride, o.padding, o.ceil_mode};
}
}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dOptions& options) {
  return dispatch1(OpId::k_conv2d, {x, weight}, conv_attrs(options));
}

Tensor conv2d_grad_input(const Tensor& grad_out, const Tensor& weight,
                         const std::vector<int64_t>& input_shape, const Conv2dOptions& options) {
  return dispatch1(OpId::k_conv2d_grad_input, {grad_out, weight}, conv_attrs(input_shape, options));
}

Tensor conv2d_grad_weight(const Tensor& grad_out, const Tensor& x,
                          const std::vector<int64_t>& weight_shape, const Conv2dOptions& options) {
  return dispatch1(OpId::k_conv2d_grad_weight, {grad_out, x}, conv_attrs(weight_shape, options));
}

Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(OpId::k_max_pool2d, {x}, pool_attrs(options));
}

Tensor max_pool2d_grad(const Tensor& grad_out, const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(OpId::k_max_pool2d_grad, {grad_out, x}, pool_attrs(options));
}

Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(OpId::k_avg_pool2d, {x}, pool_attrs(options));
}

Tensor avg_pool2d_grad(const Tensor& grad_out, const Tensor& x, const Pool2dOptions& options) {
  return dispatch1(OpId::k_avg_pool2d_grad, {grad_out, x}, pool_attrs(options));
}

Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size) {
  return dispatch1(OpId::k_adaptive_avg_pool2d, {x}, Attrs{output_size});
}

Tensor adaptive_avg_pool2d_grad(const Tensor& grad_out, const Tensor& x) {
  return dispatch1(OpId::k_adaptive_avg_pool2d_grad, {grad_out, x});
}

}  // namespace spore
