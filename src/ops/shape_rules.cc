// Shape arithmetic of the view ops (see shape_rules.h).
#include "shape_rules.h"

#include <string>

#include "describe.h"

namespace spore::ops {

namespace {

void check_rank(const OpDef& def, const std::vector<int64_t>& shape) {
  if (shape.size() > (size_t)kMaxDims)
    op_error(def, ErrorCode::kShape, "shape " + ints_str(shape) + " has " + std::to_string(shape.size()) +
                                         " dimensions; a tensor has at most " + std::to_string(kMaxDims));
}
}  // namespace

Shape resolve_reshape(const OpDef& def, const Shape& in, const std::vector<int64_t>& shape) {
  check_rank(def, shape);
  int infer_at = -1;
  int64_t known = 1;
  bool overflow = false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == -1) {
      if (infer_at >= 0)
        op_error(def, ErrorCode::kValue, "shape " + ints_str(shape) + " has more than one -1; only one size can be inferred");
      infer_at = (int)i;
    } else if (d < 0) {
      op_error(def, ErrorCode::kValue, "shape " + ints_str(shape) + " has size " + std::to_string(d) +
                                           "; sizes must be >= 0 (or -1 for one inferred size)");
    } else {
      overflow |= __builtin_mul_overflow(known, d, &known);
    }
  }
  const int64_t n = in.numel();
  std::vector<int64_t> out = shape;
  if (infer_at >= 0) {
    if (overflow || known == 0 || n % known != 0)
      op_error(def, ErrorCode::kShape, "cannot reshape " + in.str() + " (" + std::to_string(n) +
                                           " elements) into " + ints_str(shape) + ": the other sizes (product " +
                                           std::to_string(known) + ") do not divide the element count");
    out[infer_at] = n / known;
  } else if (overflow || known != n) {
    op_error(def, ErrorCode::kShape, "cannot reshape " + in.str() + " (" + std::to_string(n) +
                                         " elements) into " + ints_str(shape) +
                                         (overflow ? " (its element count overflows)" : " (" + std::to_string(known) + " elements)"));
  }
  return Shape(out);
}

// Walks both shapes from the innermost dim in "chunks": maximal runs of old dims that are
// contiguous with each other (stride[d] == stride[d+1] * size[d+1]). A new shape is a view
// exactly when each chunk is covered by a whole number of consecutive new dims; those new dims
// take strides within the chunk's base stride. Size-1 dims fit anywhere.
bool view_strides(const Shape& old_shape, const Shape& old_strides, const Shape& new_shape,
                  Shape& new_strides) {
  new_strides = contiguous_strides(new_shape);
  if (old_shape.numel() == 0 || old_shape.ndim() == 0) return true;  // any strides address nothing / one element
  if (new_shape.ndim() == 0) {
    new_strides = Shape{};
    return true;
  }
  int vd = new_shape.ndim() - 1;
  int64_t base = old_strides[old_shape.ndim() - 1];
  int64_t chunk_numel = 1, view_numel = 1;
  for (int d = old_shape.ndim() - 1; d >= 0; --d) {
    chunk_numel *= old_shape[d];
    const bool chunk_ends =
        d == 0 || (old_shape[d - 1] != 1 && old_strides[d - 1] != chunk_numel * base);
    if (!chunk_ends) continue;
    while (vd >= 0 && (view_numel < chunk_numel || new_shape[vd] == 1)) {
      new_strides[vd] = view_numel * base;
      view_numel *= new_shape[vd];
      --vd;
    }
    if (view_numel != chunk_numel) return false;
    if (d > 0) {
      base = old_strides[d - 1];
      chunk_numel = 1;
      view_numel = 1;
    }
  }
  return vd == -1;
}

SliceRange resolve_slice(const OpDef& def, const Shape& in, int64_t axis, int64_t start, int64_t end,
                         int64_t step) {
  if (in.ndim() == 0)
    op_error(def, ErrorCode::kShape, "cannot slice a 0-d tensor (it has no axis)");
  if (step <= 0)
    op_error(def, ErrorCode::kValue, "step must be > 0, got " + std::to_string(step) +
                                         " (reverse slicing is not supported)");
  SliceRange r;
  r.axis = normalize_axis(axis, in.ndim(), def.name);
  const int64_t n = in[r.axis];
  // Python semantics: negative bounds count from the end, then both clamp to [0, n].
  auto clamp = [n](int64_t v) {
    if (v < 0) v = v < -n ? 0 : v + n;
    return v > n ? n : v;
  };
  r.start = clamp(start);
  const int64_t stop = clamp(end);
  r.step = step;
  r.length = stop > r.start ? (stop - r.start - 1) / step + 1 : 0;
  return r;
}

Shape resolve_expand(const OpDef& def, const Shape& in, const Shape& in_strides,
                     const std::vector<int64_t>& shape, Shape& strides) {
  check_rank(def, shape);
  const int n = (int)shape.size(), lead = n - in.ndim();
  if (lead < 0)
    op_error(def, ErrorCode::kShape, "cannot expand " + in.str() + " to " + ints_str(shape) +
                                         ": the target has fewer dimensions than the input");
  std::vector<int64_t> out(n);
  strides = Shape{};
  for (int i = 0; i < n; ++i) {
    int64_t want = shape[i];
    if (want < -1 || (want == -1 && i < lead))
      op_error(def, ErrorCode::kValue, "target size " + std::to_string(want) + " at dimension " + std::to_string(i) + " of " +
                                           ints_str(shape) + " is invalid (sizes are >= 0; -1 keeps an existing dimension)");
    if (i < lead) {
      out[i] = want;
      strides.push_back(0);
      continue;
    }
    const int64_t have = in[i - lead];
    if (want == -1 || want == have) {
      out[i] = have;
      strides.push_back(in_strides[i - lead]);
    } else if (have == 1) {
      out[i] = want;
      strides.push_back(0);
    } else {
      op_error(def, ErrorCode::kShape, "cannot expand " + in.str() + " to " + ints_str(shape) + ": dimension " +
                                           std::to_string(i) + " has size " + std::to_string(have) +
                                           ", and only size-1 dimensions can be broadcast");
    }
  }
  return Shape(out);
}

}  // namespace spore::ops
