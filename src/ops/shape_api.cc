// Public API of the shape family (include/spore/ops.h). reshape, permute, slice, expand, concat
// and slice_scatter are registry ops; transpose, flatten, squeeze, unsqueeze, stack, split and
// chunk are composites of them, so autograd and graph tracing see only registry ops.
#include <string>

#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

namespace {
[[noreturn]] void api_error(const char* op, ErrorCode code, const std::string& what) {
  throw Error(code, std::string(op) + ": " + what);
}
}  // namespace

Tensor reshape(const Tensor& x, const std::vector<int64_t>& shape) {
  return dispatch1(OpId::k_reshape, {x}, Attrs::of(shape));
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& axes) {
  return dispatch1(OpId::k_permute, {x}, Attrs::of(axes));
}

Tensor transpose(const Tensor& x, int64_t axis0, int64_t axis1) {
  const int n = x.ndim();
  const int a = normalize_axis(axis0, n, "transpose"), b = normalize_axis(axis1, n, "transpose");
  std::vector<int64_t> p(n);
  for (int i = 0; i < n; ++i) p[i] = i;
  if (n) std::swap(p[a], p[b]);
  return permute(x, p);
}

Tensor flatten(const Tensor& x, int64_t start_axis, int64_t end_axis) {
  const int n = x.ndim();
  if (n == 0) return reshape(x, {1});  // like torch: a 0-d tensor flattens to one element
  const int s = normalize_axis(start_axis, n, "flatten"), e = normalize_axis(end_axis, n, "flatten");
  if (s > e)
    api_error("flatten", ErrorCode::kValue, "start_axis " + std::to_string(start_axis) +
                                                " comes after end_axis " + std::to_string(end_axis) +
                                                " for a tensor of shape " + x.shape().str());
  std::vector<int64_t> shape;
  for (int i = 0; i < s; ++i) shape.push_back(x.shape()[i]);
  int64_t merged = 1;
  for (int i = s; i <= e; ++i) merged *= x.shape()[i];
  shape.push_back(merged);
  for (int i = e + 1; i < n; ++i) shape.push_back(x.shape()[i]);
  return reshape(x, shape);
}

Tensor slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, int64_t step) {
  return dispatch1(OpId::k_slice, {x}, Attrs{axis, start, end, step});
}

Tensor slice_scatter(const Tensor& x, const Tensor& src, int64_t axis, int64_t start, int64_t end,
                     int64_t step) {
  return dispatch1(OpId::k_slice_scatter, {x, src}, Attrs{axis, start, end, step});
}

// squeeze with an axis whose size is not 1 is an error (NumPy and MindSpore), not a silent no-op
// (PyTorch): a wrong axis should not go unnoticed.
Tensor squeeze(const Tensor& x, std::optional<int64_t> axis) {
  std::vector<int64_t> shape;
  if (axis) {
    const int a = normalize_axis(*axis, x.ndim(), "squeeze");
    if (x.ndim() && x.shape()[a] != 1)
      api_error("squeeze", ErrorCode::kShape, "axis " + std::to_string(*axis) + " of shape " +
                                                  x.shape().str() + " has size " +
                                                  std::to_string(x.shape()[a]) + ", not 1");
    for (int i = 0; i < x.ndim(); ++i)
      if (i != a) shape.push_back(x.shape()[i]);
  } else {
    for (int64_t d : x.shape())
      if (d != 1) shape.push_back(d);
  }
  return reshape(x, shape);
}

Tensor unsqueeze(const Tensor& x, int64_t axis) {
  const int a = normalize_axis(axis, x.ndim() + 1, "unsqueeze");
  std::vector<int64_t> shape = x.shape().to_vector();
  shape.insert(shape.begin() + a, 1);
  return reshape(x, shape);
}

Tensor expand(const Tensor& x, const std::vector<int64_t>& shape) {
  return dispatch1(OpId::k_expand, {x}, Attrs::of(shape));
}

// The dispatcher's promote_mask has 32 bits, so at most 32 inputs join promotion in one call:
// longer lists are concatenated in groups of 32 and the groups concatenated again (one extra
// copy of the data, only for such lists).
Tensor concat(const std::vector<Tensor>& xs, int64_t axis) {
  constexpr size_t kMaxInputs = 32;
  if (xs.size() <= kMaxInputs)
    return dispatch1(OpId::k_concat, std::span<const Tensor>(xs), Attrs{axis});
  std::vector<Tensor> groups;
  for (size_t i = 0; i < xs.size(); i += kMaxInputs) {
    std::vector<Tensor> part(xs.begin() + i, xs.begin() + std::min(xs.size(), i + kMaxInputs));
    groups.push_back(concat(part, axis));
  }
  return concat(groups, axis);
}

Tensor stack(const std::vector<Tensor>& xs, int64_t axis) {
  if (xs.empty()) api_error("stack", ErrorCode::kValue, "needs at least one tensor");
  for (size_t k = 1; k < xs.size(); ++k)
    if (xs[k].defined() && xs[0].defined() && xs[k].shape() != xs[0].shape())
      api_error("stack", ErrorCode::kShape, "tensor " + std::to_string(k) + " has shape " +
                                                xs[k].shape().str() + " but tensor 0 has " +
                                                xs[0].shape().str() + "; stacked tensors must have equal shapes");
  const int a = normalize_axis(axis, xs[0].ndim() + 1, "stack");
  std::vector<Tensor> parts;
  parts.reserve(xs.size());
  for (const Tensor& x : xs) parts.push_back(unsqueeze(x, a));
  return concat(parts, a);
}

std::vector<Tensor> split(const Tensor& x, const std::vector<int64_t>& sizes, int64_t axis) {
  if (x.ndim() == 0) api_error("split", ErrorCode::kShape, "cannot split a 0-d tensor");
  const int a = normalize_axis(axis, x.ndim(), "split");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) api_error("split", ErrorCode::kValue, "sizes must be >= 0, got " + std::to_string(s));
    total += s;
  }
  if (total != x.shape()[a])
    api_error("split", ErrorCode::kShape, "sizes sum to " + std::to_string(total) + " but axis " +
                                              std::to_string(axis) + " of shape " + x.shape().str() +
                                              " has extent " + std::to_string(x.shape()[a]));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, at, at + s));
    at += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& x, int64_t sections, int64_t axis) {
  if (sections <= 0)
    api_error("chunk", ErrorCode::kValue, "sections must be > 0, got " + std::to_string(sections));
  if (x.ndim() == 0) api_error("chunk", ErrorCode::kShape, "cannot chunk a 0-d tensor");
  const int a = normalize_axis(axis, x.ndim(), "chunk");
  const int64_t n = x.shape()[a];
  if (n % sections != 0)
    api_error("chunk", ErrorCode::kShape, "axis " + std::to_string(axis) + " of shape " +
                                              x.shape().str() + " (extent " + std::to_string(n) +
                                              ") does not divide into " + std::to_string(sections) +
                                              " equal sections; use split with explicit sizes");
  return split(x, std::vector<int64_t>((size_t)sections, n / sections), a);
}

}  // namespace spore
