// ONNX Resize (op sets 10-19+) and the deprecated Upsample (7-9) onto registry ops (NOTE [ONNX]).
// Every mode is separable: along each resized axis, output cell o reads taps at constant source
// indices with constant weights (one tap for nearest, two for linear, four for cubic), so an axis
// is sum_k index_select(x, index_k) * weight_k, the indices and weights computed here from the
// spec's coordinate transformation. tf_crop_and_resize's outside cells get extrapolation_value.
// antialias (op set 18) widens a downsampling axis's linear or cubic kernel by 1 / scale: more
// taps, their weights normalised, as the spec's reference computes them.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct ResizeSpec {
  std::string mode = "nearest";              // nearest, linear, cubic
  std::string transform = "half_pixel";      // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // nearest_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation = 0;
};

// The antialiased taps of output coordinate xs on an axis of `in` cells scaled by `scale`: the
// reference's kernel (linear: a triangle, cubic: the cubic convolution) evaluated at scale times
// each tap's distance (the scale at most 1), normalised to sum 1; taps beyond the ends read the
// edge cells (exclude_outside drops them instead and normalises again).
void antialias_taps(const ResizeSpec& r, double xs, int64_t in, double scale, std::vector<int64_t>& index, std::vector<double>& weight) {
  const double s = std::min(scale, 1.0);
  const bool linear = r.mode == "linear";
  const int64_t start = (int64_t)std::floor((linear ? -1.0 : -2.0) / s) + 1, n = 2 - 2 * start;
  const double base = std::floor(xs);
  const double ratio = xs == base ? 1.0 : xs - base;  // the reference's choice for whole coordinates
  const int64_t first = (int64_t)base - (xs == base ? 1 : 0) + start;
  index.assign((size_t)n, 0);
  weight.assign((size_t)n, 0.0);
  double total = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double d = std::fabs(s * ((double)(start + j) - ratio));
    double w;
    if (linear) w = std::clamp(1 - d, 0.0, 1.0);
    else {
      const double a = r.cubic_a;
      w = d <= 1 ? ((a + 2) * d - (a + 3)) * d * d + 1 : d < 2 ? ((a * d - 5 * a) * d + 8 * a) * d - 4 * a : 0.0;
    }
    weight[(size_t)j] = w;
    total += w;
  }
  for (double& w : weight) w /= total;
  double kept = 0;
  for (int64_t j = 0; j < n; ++j) {
    const int64_t i = first + j;
    if (r.exclude_outside && (i < 0 || i >= in)) weight[(size_t)j] = 0;
    kept += weight[(size_t)j];
    index[(size_t)j] = std::clamp<int64_t>(i, 0, in - 1);
  }
  if (r.exclude_outside && kept != 0)
    for (double& w : weight) w /= kept;
}

// The source coordinate of output cell o of an axis resized from `in` to `out` cells by `scale`.
// The spec's "length_resized" is the unrounded scale * in (align_corners, tf_crop_and_resize and
// pytorch_half_pixel use it), the integer `out` only half_pixel_symmetric's adjustment.
double source_coordinate(const ResizeSpec& r, int64_t o, int64_t in, int64_t out_int, double scale, double roi_start, double roi_end) {
  const std::string& t = r.transform;
  const double out = scale * (double)in;
  if (t == "half_pixel") return (o + 0.5) / scale - 0.5;
  if (t == "half_pixel_symmetric") {
    const double adjustment = (double)out_int / out, center = in / 2.0;
    return center * (1 - adjustment) + (o + 0.5) / scale - 0.5;
  }
  if (t == "pytorch_half_pixel") return out == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
  if (t == "align_corners") return out == 1 ? 0 : o * (double)(in - 1) / (double)(out - 1);
  if (t == "asymmetric") return o / scale;
  // tf_crop_and_resize
  return out == 1 ? 0.5 * (roi_start + roi_end) * (in - 1) : roi_start * (in - 1) + o * (roi_end - roi_start) * (in - 1) / (out - 1);
}

int64_t nearest_index(const std::string& mode, double x) {
  const double fl = std::floor(x);
  if (mode == "floor") return (int64_t)fl;
  if (mode == "ceil") return (int64_t)std::ceil(x);
  const bool half = x - fl == 0.5;
  if (mode == "round_prefer_ceil") return half ? (int64_t)fl + 1 : (int64_t)std::round(x);
  return half ? (int64_t)fl : (int64_t)std::round(x);  // round_prefer_floor
}

// Cubic convolution weights of the four taps floor(x) - 1 .. floor(x) + 2 at fraction t.
void cubic_weights(double a, double t, double w[4]) {
  auto far = [a](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };   // 1 < |d| < 2
  auto near = [a](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };        // |d| <= 1
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

uint32_t resize_axis(NodeCtx& c, const ResizeSpec& r, uint32_t x, int axis, int64_t out, double scale, double roi_start, double roi_end,
                     uint32_t* outside) {
  Mapper& m = c.m;
  const int64_t in = m.shape(x)[axis];
  if (in == 0) c.bad("Resize of an empty axis");
  std::vector<int64_t> aa_index;
  std::vector<double> aa_weight;
  if (r.antialias) antialias_taps(r, 0.0, in, scale, aa_index, aa_weight);  // the tap count only
  const int taps = r.antialias ? (int)aa_index.size() : r.mode == "nearest" ? 1 : r.mode == "linear" ? 2 : 4;
  if (taps > 1024) c.unsupported("an antialiased Resize with " + std::to_string(taps) + " taps per cell (scale " + std::to_string(scale) + ")");
  std::vector<std::vector<int64_t>> index(taps, std::vector<int64_t>((size_t)out));
  std::vector<std::vector<double>> weight(taps, std::vector<double>((size_t)out));
  std::vector<uint8_t> out_of_range((size_t)out, 0);
  bool any_outside = false, identity = out == in;
  for (int64_t o = 0; o < out; ++o) {
    const double xs = source_coordinate(r, o, in, out, scale, roi_start, roi_end);
    if (r.transform == "tf_crop_and_resize" && (xs < 0 || xs > in - 1)) out_of_range[(size_t)o] = 1, any_outside = true;
    auto clampi = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
    if (r.antialias) {
      antialias_taps(r, xs, in, scale, aa_index, aa_weight);
      for (int k = 0; k < taps; ++k) index[k][(size_t)o] = aa_index[(size_t)k], weight[k][(size_t)o] = aa_weight[(size_t)k];
    } else if (taps == 1) {
      index[0][(size_t)o] = clampi(nearest_index(r.nearest, xs));
      weight[0][(size_t)o] = 1;
    } else if (taps == 2) {
      const double xc = std::clamp(xs, 0.0, (double)(in - 1));  // the edge value beyond the ends
      const int64_t i0 = (int64_t)std::floor(xc);
      const double t = xc - i0;
      index[0][(size_t)o] = clampi(i0);
      index[1][(size_t)o] = clampi(i0 + 1);
      weight[0][(size_t)o] = 1 - t;
      weight[1][(size_t)o] = t;
    } else {
      const int64_t i0 = (int64_t)std::floor(xs);
      double w[4];
      cubic_weights(r.cubic_a, xs - i0, w);
      double total = 0;
      for (int k = 0; k < 4; ++k) {
        const int64_t i = i0 - 1 + k;
        if (r.exclude_outside && (i < 0 || i >= in)) w[k] = 0;
        total += w[k];
      }
      for (int k = 0; k < 4; ++k) {
        index[k][(size_t)o] = clampi(i0 - 1 + k);
        weight[k][(size_t)o] = r.exclude_outside && total != 0 ? w[k] / total : w[k];
      }
    }
    // An axis whose every output cell is its own input cell, whole, is left as it is.
    double self = 0;
    for (int k = 0; k < taps; ++k) {
      if (weight[k][(size_t)o] == 0) continue;
      if (index[k][(size_t)o] == o) self += weight[k][(size_t)o];
      else identity = false;
    }
    identity = identity && self == 1.0;
  }
  if (any_outside) {
    std::vector<int64_t> shape(m.shape(x).ndim(), 1);
    shape[axis] = out;
    Tensor mask = Tensor::empty(Shape(shape), DType::kBool, Device::cpu());
    std::memcpy(mask.data_ptr(), out_of_range.data(), out_of_range.size());
    const uint32_t here = m.constant(mask);
    *outside = *outside == kNone ? here : m.emit(c, OpId::k_logical_or, {*outside, here});
  }
  if (identity) return x;
  const DType t = m.dtype(x);
  std::vector<int64_t> wshape(m.shape(x).ndim(), 1);
  wshape[axis] = out;
  uint32_t y = kNone;
  for (int k = 0; k < taps; ++k) {
    uint32_t part = m.take(c, x, axis, index[k]);
    if (taps > 1) part = m.emit(c, OpId::k_mul, {part, m.cast_to(c, m.constant_of(weight[k], Shape(wshape)), t)});
    y = y == kNone ? part : m.emit(c, OpId::k_add, {y, part});
  }
  return y;
}

// Resizes x to `sizes` (every axis), with `scales` the per-axis factors the coordinates use.
uint32_t resize(NodeCtx& c, const ResizeSpec& r, uint32_t x, const std::vector<int64_t>& sizes, const std::vector<double>& scales,
                const std::vector<double>& roi) {
  const Shape s = c.m.shape(x);
  const int rank = s.ndim();
  checked_numel(sizes, c.where + " output");
  int64_t total = 1;
  for (int64_t e : sizes) total = e == 0 ? 0 : total <= lite::kMaxValueElements / std::max<int64_t>(e, 1) ? total * e : lite::kMaxValueElements + 1;
  if (total > lite::kMaxValueElements) c.unsupported("a Resize output over Lite's 2^31 elements per value");
  const DType t = c.m.dtype(x);
  if (r.mode != "nearest" && !is_floating(t)) c.unsupported("Resize in mode '" + r.mode + "' of " + std::string(dtype_name(t)));
  uint32_t y = x, outside = kNone;
  for (int d = 0; d < rank; ++d) {
    if (sizes[d] == s[d] && scales[d] == 1.0 && r.transform != "tf_crop_and_resize") continue;
    const double rs = roi.empty() ? 0 : roi[d], re = roi.empty() ? 1 : roi[d + rank];
    y = resize_axis(c, r, y, d, sizes[d], scales[d], rs, re, &outside);
  }
  if (outside != kNone) y = c.m.emit(c, OpId::k_where, {outside, c.m.scalar(r.extrapolation, t), y});
  if (y == x) y = c.m.emit(c, OpId::k_copy, {y});
  return y;
}

// Output extents from scales: floor(in * scale) (tf_crop_and_resize's roi does not scale them,
// as in the spec's reference).
std::vector<int64_t> sizes_of(NodeCtx& c, const Shape& s, const std::vector<double>& scales) {
  std::vector<int64_t> out;
  for (int d = 0; d < s.ndim(); ++d) {
    if (!(scales[d] > 0) || !std::isfinite(scales[d])) c.bad("a scale of " + std::to_string(scales[d]) + " (scales must be positive)");
    const double e = std::floor(s[d] * scales[d]);
    if (!(e >= 0) || e > (double)lite::kMaxValueElements) c.unsupported("a Resize output extent of " + std::to_string(e));
    out.push_back((int64_t)e);
  }
  return out;
}

std::vector<uint32_t> resize_op(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const int rank = s.ndim();
  ResizeSpec r;
  r.mode = c.s("mode", "nearest");
  if (r.mode != "nearest" && r.mode != "linear" && r.mode != "cubic") c.bad("mode '" + r.mode + "'");
  r.antialias = c.i("antialias", 0) != 0;
  if (r.antialias && r.mode == "nearest") c.bad("antialias applies to the linear and cubic modes");
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (c.m.opset < 11) {  // Resize-10: (X, scales), asymmetric coordinates, nearest rounds down
    r.transform = "asymmetric";
    r.nearest = "floor";
    scales = c.m.float_data(c, c.at(1), "scales");
  } else {
    r.transform = c.s("coordinate_transformation_mode", "half_pixel");
    r.nearest = c.s("nearest_mode", "round_prefer_floor");
    r.cubic_a = c.f("cubic_coeff_a", -0.75);
    r.exclude_outside = c.i("exclude_outside", 0) != 0;
    r.extrapolation = c.f("extrapolation_value", 0.0);
    if (c.given(1)) roi = c.m.float_data(c, c.in[1], "roi");
    if (c.given(2)) scales = c.m.float_data(c, c.in[2], "scales");
    if (c.given(3)) sizes = c.m.int_data(c, c.in[3], "sizes");
  }
  static const std::set<std::string> transforms = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                                   "asymmetric", "tf_crop_and_resize"};
  if (!transforms.count(r.transform)) c.bad("coordinate_transformation_mode '" + r.transform + "'");
  if (r.nearest != "round_prefer_floor" && r.nearest != "round_prefer_ceil" && r.nearest != "floor" && r.nearest != "ceil")
    c.bad("nearest_mode '" + r.nearest + "'");
  // axes (op set 18): scales, sizes and roi name only these axes; the others keep their extent.
  std::vector<int64_t> axes = c.ints("axes");
  if (axes.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  std::vector<int> ax;
  for (int64_t a : axes) ax.push_back(normalize_axis(c, a, rank));
  const size_t na = ax.size();
  auto spread = [&](const std::vector<double>& v, double fill, size_t per) {
    std::vector<double> out(rank * per, fill);
    if (per == 2) for (int d = 0; d < rank; ++d) out[d + rank] = 1.0;
    for (size_t k = 0; k < na; ++k)
      for (size_t p = 0; p < per; ++p) out[ax[k] + p * rank] = v[k + p * na];
    return out;
  };
  if (!roi.empty()) {
    if (roi.size() != 2 * na) c.bad("roi has " + std::to_string(roi.size()) + " values for " + std::to_string(na) + " axes");
    roi = spread(roi, 0.0, 2);
  }
  if (!scales.empty() && !sizes.empty()) c.bad("both scales and sizes are given");
  if (!sizes.empty()) {
    if (sizes.size() != na) c.bad("sizes has " + std::to_string(sizes.size()) + " values for " + std::to_string(na) + " axes");
    std::vector<double> ratio(na);
    for (size_t k = 0; k < na; ++k) {
      if (sizes[k] < 0) c.bad("a negative size");
      ratio[k] = (double)sizes[k] / (double)s[ax[k]];
    }
    const std::string policy = c.s("keep_aspect_ratio_policy", "stretch");
    if (policy == "not_larger" || policy == "not_smaller") {
      const double keep = policy == "not_larger" ? *std::min_element(ratio.begin(), ratio.end()) : *std::max_element(ratio.begin(), ratio.end());
      for (size_t k = 0; k < na; ++k) {
        ratio[k] = keep;
        sizes[k] = (int64_t)std::floor(keep * (double)s[ax[k]] + 0.5);  // rounded half up
      }
    } else if (policy != "stretch") {
      c.bad("keep_aspect_ratio_policy '" + policy + "'");
    }
    std::vector<double> all(rank, 1.0);
    std::vector<int64_t> out(s.begin(), s.end());
    for (size_t k = 0; k < na; ++k) all[ax[k]] = ratio[k], out[ax[k]] = sizes[k];
    return {resize(c, r, x, out, all, roi)};
  }
  if (scales.size() != na) c.bad("scales has " + std::to_string(scales.size()) + " values for " + std::to_string(na) + " axes (or give sizes)");
  // The spec's scales are float32: the coordinates use that value.
  for (double& v : scales) v = (double)(float)v;
  const std::vector<double> all = spread(scales, 1.0, 1);
  return {resize(c, r, x, sizes_of(c, s, all), all, roi)};
}

// Upsample (op sets 7-9, deprecated): scales as an attribute (7) or input (9); nearest (rounding
// down) or linear, both with asymmetric coordinates.
std::vector<uint32_t> upsample(NodeCtx& c) {
  const uint32_t x = c.at(0);
  ResizeSpec r;
  r.mode = c.s("mode", "nearest");
  if (r.mode == "bilinear") r.mode = "linear";
  if (r.mode != "nearest" && r.mode != "linear") c.bad("mode '" + r.mode + "'");
  r.transform = "asymmetric";
  r.nearest = "floor";
  std::vector<double> scales = c.given(1) ? c.m.float_data(c, c.in[1], "scales") : c.floats("scales");
  if ((int)scales.size() != c.m.shape(x).ndim()) c.bad("scales has " + std::to_string(scales.size()) + " values for the input's rank");
  for (double& v : scales) {
    v = (double)(float)v;
    if (v < 1) c.bad("an Upsample scale below 1");
  }
  return {resize(c, r, x, sizes_of(c, c.m.shape(x), scales), scales, {})};
}

}  // namespace

void add_resize_ops(HandlerTable& t) {
  t["Resize"] = resize_op;
  t["Upsample"] = upsample;
}

}  // namespace spore::onnx::detail
