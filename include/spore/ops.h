// The op API: free functions in MindSpore/PyTorch spelling. Each builds one registry op
// (include/spore/op_list.h) through the dispatcher, except the few composites noted here.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "spore/tensor.h"

namespace spore {

// ---- elementwise binary (broadcasting, NOTE [Type promotion]) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);  // true division: integers give float32
Tensor pow(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
// Scalar forms: the scalar takes the tensor's dtype when their categories agree.
Tensor add(const Tensor& a, double b);
Tensor sub(const Tensor& a, double b);
Tensor mul(const Tensor& a, double b);
Tensor div(const Tensor& a, double b);
Tensor pow(const Tensor& a, double b);
// A 0-d tensor holding `value` in the dtype that `like` promotes to with such a scalar.
Tensor scalar_like(const Tensor& like, double value);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, double b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, double b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, double b) { return div(a, b); }

// ---- elementwise unary ----
Tensor neg(const Tensor& x);
Tensor abs(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor rsqrt(const Tensor& x);
Tensor sin(const Tensor& x);
Tensor cos(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor erf(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor relu6(const Tensor& x);
Tensor round(const Tensor& x);  // half to even; integers unchanged
Tensor gelu(const Tensor& x, bool tanh_approximation = false);
Tensor silu(const Tensor& x);
Tensor logical_not(const Tensor& x);
inline Tensor operator-(const Tensor& x) { return neg(x); }

Tensor where(const Tensor& cond, const Tensor& x, const Tensor& y);
Tensor cast(const Tensor& x, DType dtype);

// ---- reductions: axes empty = all axes ----
Tensor sum(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor mean(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor max(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
Tensor min(const Tensor& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
// correction: 1 for the unbiased estimate (PyTorch's default), 0 for the population variance.
Tensor var(const Tensor& x, const std::vector<int64_t>& axes = {}, int64_t correction = 1,
           bool keepdims = false);
// Sums x down to `shape`, which x broadcasts from: its extra leading axes and the axes where
// `shape` has extent 1 (how a broadcast operand's gradient is reduced back to the operand).
Tensor sum_to(const Tensor& x, const Shape& shape);
// Index of the first maximum along one axis (or of the flattened tensor), as int64.
Tensor argmax(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);

// ---- linear algebra ----
// NumPy matmul: 1-D operands are promoted to matrices and the added axis removed; leading
// (batch) axes broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- shape ops (NOTE [Views]) ----
Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape);  // one -1 allowed
Tensor flatten(const Tensor& x, int64_t start_axis = 0, int64_t end_axis = -1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& axes);
Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1);
// Python-style slice of one axis: start/end clamp to the extent, step > 0.
Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step = 1);
Tensor squeeze(const Tensor& x, std::optional<int64_t> axis = std::nullopt);
Tensor unsqueeze(const Tensor& x, int64_t axis);
Tensor expand(const Tensor& x, const std::vector<int64_t>& shape);  // broadcast view
Tensor concat(const std::vector<Tensor>& xs, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& xs, int64_t axis = 0);
// Splits into pieces of the given sizes (summing to the extent), or into `sections` equal ones.
std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis = 0);
std::vector<Tensor> chunk(const Tensor& x, int64_t sections, int64_t axis = 0);
// x with the slice x[..., start:end:step, ...] of `axis` replaced by src (which has the slice's
// shape; bounds resolve as in slice()). A new tensor: x is not modified. slice's gradient.
Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t axis, int64_t start, int64_t end,
                     int64_t step = 1);

// ---- indexing ----
// PyTorch gather: out[i][j] = x[index[i][j]][j] for axis 0, and so on.
Tensor gather(const Tensor& x, int64_t axis, const Tensor& index);
Tensor index_select(const Tensor& x, int64_t axis, const Tensor& index);
// Rows of `table` [vocab, dim] for integer ids of any shape: result ids.shape + [dim].
Tensor embedding(const Tensor& ids, const Tensor& table);
// PyTorch scatter_add: a copy of x with out[index[i][j]][j] += src[i][j] for axis 0, and so on.
// index has x's rank, no dimension larger than src's, nor than x's off the axis; src has x's
// dtype. Repeated indices accumulate, in index order whatever the thread count. gather's gradient.
Tensor scatter_add(const Tensor& x, int64_t axis, const Tensor& index, const Tensor& src);

// ---- convolution and pooling (NCHW; pairs are (height, width)) ----
struct Conv2dOptions {
  std::vector<int64_t> stride{1, 1};
  std::vector<int64_t> padding{0, 0};  // zeros on both sides
  std::vector<int64_t> dilation{1, 1};
  int64_t groups = 1;                  // groups == in_channels: depthwise
};
// x [N, C, H, W], weight [O, C/groups, kh, kw] -> [N, O, Ho, Wo]; bias added by the caller.
Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dOptions& options = {});
// Gradients of conv2d: with respect to its input (given the input's shape) and its weight.
Tensor conv2d_grad_input(const Tensor& grad_out, const Tensor& weight, const std::vector<int64_t>& input_shape,
                         const Conv2dOptions& options = {});
Tensor conv2d_grad_weight(const Tensor& grad_out, const Tensor& x, const std::vector<int64_t>& weight_shape,
                          const Conv2dOptions& options = {});
struct Pool2dOptions {
  std::vector<int64_t> kernel{2, 2};
  std::vector<int64_t> stride{};       // empty: same as kernel
  std::vector<int64_t> padding{0, 0};  // max pool pads with -inf; avg pool counts only real cells
  bool ceil_mode = false;
};
Tensor max_pool2d(const Tensor& x, const Pool2dOptions& options = {});
Tensor max_pool2d_grad(const Tensor& grad_out, const Tensor& x, const Pool2dOptions& options = {});
Tensor avg_pool2d(const Tensor& x, const Pool2dOptions& options = {});
Tensor avg_pool2d_grad(const Tensor& grad_out, const Tensor& x, const Pool2dOptions& options = {});
// PyTorch's adaptive windows: start = floor(i*H/Ho), end = ceil((i+1)*H/Ho).
Tensor adaptive_avg_pool2d(const Tensor& x, const std::vector<int64_t>& output_size);
Tensor adaptive_avg_pool2d_grad(const Tensor& grad_out, const Tensor& x);

// ---- normalisation ----
Tensor softmax(const Tensor& x, int64_t axis = -1);
Tensor log_softmax(const Tensor& x, int64_t axis = -1);

// ---- creation (on the context's default device unless one is given) ----
Tensor full(const std::vector<int64_t>& shape, double value, DType dtype = DType::kFloat32);
Tensor full(const std::vector<int64_t>& shape, double value, DType dtype, Device device);
Tensor zeros(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor ones(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor zeros_like(const Tensor& x);
Tensor ones_like(const Tensor& x);
// [start, end) with step; dtype int64 unless given.
Tensor arange(double start, double end, double step = 1, DType dtype = DType::kInt64);
// NOTE [Random numbers]: counter-based (Philox-4x32-10): element i of a call with seed s is a
// function of (s, i) only, so values are identical whatever the thread count or device.
Tensor random_uniform(const std::vector<int64_t>& shape, uint64_t seed, double low = 0,
                      double high = 1, DType dtype = DType::kFloat32);
Tensor random_normal(const std::vector<int64_t>& shape, uint64_t seed, double mean = 0,
                     double stddev = 1, DType dtype = DType::kFloat32);

// ---- comparisons of whole tensors (host-side helpers for tests and probes) ----
// Largest |a - b| over all elements, computed in float64 after broadcasting.
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace spore
