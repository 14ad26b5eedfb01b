// ONNX's ReduceProd and CumProd written with registry ops (NOTE [ONNX attention and losses]).
// The registry has no product reduction, and exp(sum(log|x|)) is neither exact nor defined at 0,
// so both multiply slices: ReduceProd halves each axis in turn (a ones cell added to an odd
// extent), log2(n) multiplications; CumProd is a Hillis-Steele scan, y *= y shifted by 1, 2, 4,
// ... cells with ones shifted in. Integer inputs stay integers (wrapping as their type does).
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

uint32_t slice(NodeCtx& c, uint32_t x, int axis, int64_t from, int64_t to) {
  return c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, from, to, int64_t{1}));
}

}  // namespace

uint32_t product_along(NodeCtx& c, uint32_t x, int axis) {
  int64_t n = c.m.shape(x)[axis];
  if (n == 0) {  // the empty product is 1
    const Shape& s = c.m.shape(x);
    std::vector<int64_t> shape(s.begin(), s.end());
    shape[axis] = 1;
    return c.m.emit(c, OpId::k_fill, {}, Attrs::of(shape, 1.0, c.m.dtype(x)));
  }
  while (n > 1) {
    if (n % 2) x = pad_axis(c, x, axis, 0, 1, 1.0), ++n;
    x = c.m.emit(c, OpId::k_mul, {slice(c, x, axis, 0, n / 2), slice(c, x, axis, n / 2, n)});
    n /= 2;
  }
  return x;
}

namespace {

std::vector<uint32_t> reduce_prod(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  std::vector<int64_t> axes = c.m.opset >= 18 ? (c.given(1) ? c.m.int_data(c, c.in[1], "axes") : std::vector<int64_t>{}) : c.ints("axes");
  const bool keepdims = c.i("keepdims", 1) != 0;
  if (axes.empty() && c.i("noop_with_empty_axes", 0) != 0) return {c.m.emit(c, OpId::k_copy, {x})};
  std::vector<bool> reduced((size_t)s.ndim(), axes.empty());
  for (int64_t a : axes) {
    const int d = normalize_axis(c, a, s.ndim());
    if (reduced[(size_t)d]) c.bad("axis " + std::to_string(a) + " is named twice");
    reduced[(size_t)d] = true;
  }
  uint32_t y = x;
  std::vector<int64_t> out;
  for (int d = 0; d < s.ndim(); ++d) {
    if (reduced[(size_t)d]) y = product_along(c, y, d);
    if (!reduced[(size_t)d] || keepdims) out.push_back(reduced[(size_t)d] ? 1 : s[d]);
  }
  return {y == x ? c.m.emit(c, OpId::k_copy, {x}) : c.m.reshape(c, y, out)};
}

std::vector<uint32_t> cum_prod(NodeCtx& c) {
  uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const std::vector<int64_t> av = c.m.int_data(c, c.at(1), "axis");
  if (av.size() != 1) c.bad("axis must hold one value");
  if (s.ndim() == 0) c.bad("CumProd takes an input of rank 1 or more");
  const int axis = normalize_axis(c, av[0], s.ndim());
  const int64_t n = s[axis];
  const bool exclusive = c.i("exclusive", 0) != 0, reverse = c.i("reverse", 0) != 0;
  std::vector<int64_t> backwards((size_t)n);
  for (int64_t i = 0; i < n; ++i) backwards[(size_t)i] = n - 1 - i;
  if (reverse) x = c.m.take(c, x, axis, backwards);
  if (exclusive && n > 0) x = pad_axis(c, x, axis, 1, -1, 1.0);
  for (int64_t shift = 1; shift < n; shift *= 2) x = c.m.emit(c, OpId::k_mul, {x, pad_axis(c, x, axis, shift, -shift, 1.0)});
  if (reverse) x = c.m.take(c, x, axis, backwards);
  return {x == c.at(0) ? c.m.emit(c, OpId::k_copy, {x}) : x};
}

}  // namespace

void add_product_ops(HandlerTable& t) {
  t["ReduceProd"] = reduce_prod;
  t["CumProd"] = cum_prod;
}

}  // namespace spore::onnx::detail
