// Internal: the shape arithmetic of the view ops (reshape, slice, expand), shared by their
// inference and view functions, which must agree exactly.
#pragma once
#include <cstdint>
#include <vector>

#include "spore/op_registry.h"

namespace spore::ops {

// The target shape of reshape: at most one -1 (inferred), other sizes >= 0, same element count.
Shape resolve_reshape(const OpDef& def, const Shape& in, const std::vector<int64_t>& shape);

// Strides that let `new_shape` view the same elements, in the same row-major order, as
// (old_shape, old_strides); false when no such strides exist and the data must be copied.
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape,
                  Shape& new_strides);

// A Python slice of one axis, resolved: start clamped to [0, n], length >= 0.
struct SliceRange {
  int axis = 0;
  int64_t start = 0, length = 0, step = 1;
};
SliceRange resolve_slice(const OpDef& def, const Shape& in, int64_t axis, int64_t start, int64_t end,
                         int64_t step);

// The broadcast shape of expand (-1 keeps a dim; new leading dims allowed) and its strides
// (0 along every broadcast dim).
Shape resolve_expand(const OpDef& def, const Shape& in, const Shape& in_strides,
                     const std::vector<int64_t>& shape, Shape& strides);

}  // namespace spore::ops
