// Inference helpers shared by several op families.
#include <algorithm>

#include "op_families.h"

namespace spore::ops {

void infer_same_as_input(const InferArgs& a, Inference& out) {
  out.outputs[0] = {a.inputs[0].shape(), a.inputs[0].dtype()};
  out.compute = a.inputs[0].dtype();
}

std::vector<int> reduce_axes(const OpDef& def, const std::vector<int64_t>& axes, int ndim) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < ndim; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) out.push_back(normalize_axis(a, ndim, def.name));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end())
    op_error(def, ErrorCode::kValue, "an axis is repeated in the reduction axes");
  if (ndim == 0) out.clear();
  return out;
}

Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  Shape out;
  for (int i = 0; i < in.ndim(); ++i) {
    bool reduced = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (!reduced) out.push_back(in[i]);
    else if (keepdims) out.push_back(1);
  }
  return out;
}

}  // namespace spore::ops
