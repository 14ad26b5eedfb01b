// ONNX layout ops onto registry ops (NOTE [ONNX]): Slice of every op set (negative steps too),
// Pad in every mode, DepthToSpace / SpaceToDepth, Tile, Trilu, CumSum, InstanceNormalization,
// CenterCropPad, ReverseSequence.
// Whatever picks cells in a data-independent order (a backwards slice, a reflected border) is one
// index_select with a constant index along each axis, computed here from the known extents.
#include <algorithm>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// Refuses an axis of `extent` cells before its index is built: a hostile pad or slice must not
// become a huge index vector (the node's value is checked again when it is added).
void check_extent(NodeCtx& c, int64_t extent) {
  if (extent > lite::kMaxValueElements) c.unsupported("an axis of " + std::to_string(extent) + " cells (over Lite's 2^31 per value)");
}

std::vector<uint32_t> slice(NodeCtx& c) {
  uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const int rank = s.ndim();
  std::vector<int64_t> starts, ends, axes, steps;
  if (c.m.opset < 10) {  // attributes, no steps
    starts = c.ints("starts");
    ends = c.ints("ends");
    axes = c.ints("axes");
  } else {
    if (c.m.unknowable.count(c.at(1)) || c.m.unknowable.count(c.at(2))) return slice_per_iteration(c);
    if (ragged_slice_applies(c)) return ragged_slice(c);
    starts = c.m.int_data(c, c.at(1), "starts");
    ends = c.m.int_data(c, c.at(2), "ends");
    if (c.given(3)) axes = c.m.int_data(c, c.in[3], "axes");
    if (c.given(4)) steps = c.m.int_data(c, c.in[4], "steps");
  }
  if (axes.empty())
    for (size_t k = 0; k < starts.size(); ++k) axes.push_back((int64_t)k);
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.bad("starts, ends, axes and steps differ in length");
  std::set<int> seen;
  for (size_t k = 0; k < starts.size(); ++k) {
    const int axis = normalize_axis(c, axes[k], rank);
    if (!seen.insert(axis).second) c.bad("axis " + std::to_string(axes[k]) + " is repeated");
    if (steps[k] == 0) c.bad("a step of 0");
    if (steps[k] > 0) {
      x = c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, starts[k], ends[k], steps[k]));
      continue;
    }
    // Backwards: start clamped to [0, n - 1] and end to [-1, n - 1] after adding n to negatives
    // (the spec's rules), the cells start, start + step, ... while above end.
    const int64_t n = s[axis];
    int64_t begin = starts[k] < 0 ? starts[k] + n : starts[k];
    int64_t end = ends[k] < 0 ? ends[k] + n : ends[k];
    begin = std::clamp<int64_t>(begin, 0, std::max<int64_t>(0, n - 1));
    end = std::clamp<int64_t>(end, -1, n - 1);
    std::vector<int64_t> index;
    for (int64_t i = begin; n > 0 && i > end; i += steps[k]) {
      index.push_back(i);
      if (i < -steps[k]) break;  // the next one would be below 0 (and i + step might overflow)
    }
    x = c.m.take(c, x, axis, index);
  }
  if (starts.empty()) x = c.m.emit(c, OpId::k_copy, {x});
  return {x};
}

// The source cell of output position p (from -begin) for an axis of n cells in Pad's modes.
int64_t pad_source(const std::string& mode, int64_t p, int64_t n) {
  if (mode == "edge") return std::clamp<int64_t>(p, 0, n - 1);
  if (mode == "wrap") return ((p % n) + n) % n;
  // reflect, repeated as numpy's pad (the ONNX reference) does when the pad exceeds n - 1
  if (n == 1) return 0;
  const int64_t period = 2 * (n - 1);
  const int64_t q = ((p % period) + period) % period;
  return q < n ? q : period - q;
}

std::vector<uint32_t> pad(NodeCtx& c) {
  const std::string mode = c.s("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap") c.bad("Pad mode '" + mode + "' is not an ONNX mode");
  uint32_t x = c.at(0);
  const int rank = c.m.shape(x).ndim();
  std::vector<int64_t> pads, axes;
  double value = 0;
  if (c.m.opset < 11) {  // pads and value attributes
    pads = c.ints("pads");
    value = c.f("value", 0.0);
  } else {
    pads = c.m.int_data(c, c.at(1), "pads");
    if (c.given(3)) axes = c.m.int_data(c, c.in[3], "axes");
    if (c.given(2)) {
      const Tensor& v = c.m.data(c, c.in[2], "constant_value");
      if (v.numel() != 1) c.bad("constant_value must hold one element");
      value = v.to(DType::kFloat64).to_vector<double>()[0];
    }
  }
  if (axes.empty())
    for (int d = 0; d < rank; ++d) axes.push_back(d);
  if (pads.size() != 2 * axes.size()) c.bad("pads has " + std::to_string(pads.size()) + " values for " + std::to_string(axes.size()) + " axes");
  for (int64_t p : pads)
    if (p < -lite::kMaxElements || p > lite::kMaxElements) c.unsupported("a pad of " + std::to_string(p) + " cells (over Lite's 2^31 per value)");
  for (size_t k = 0; k < axes.size(); ++k) {
    const int axis = normalize_axis(c, axes[k], rank);
    const int64_t begin = pads[k], end = pads[k + axes.size()];
    if (mode == "constant" || (begin <= 0 && end <= 0)) {
      x = pad_axis(c, x, axis, begin, end, value);
      continue;
    }
    if (begin < 0 || end < 0) x = pad_axis(c, x, axis, std::min<int64_t>(begin, 0), std::min<int64_t>(end, 0), 0);  // crop first
    const int64_t b = std::max<int64_t>(begin, 0), e = std::max<int64_t>(end, 0), n = c.m.shape(x)[axis];
    if (n == 0) c.bad("Pad in mode '" + mode + "' of an empty axis");
    if (b > lite::kMaxValueElements || e > lite::kMaxValueElements) check_extent(c, std::max(b, e));
    check_extent(c, n + b + e);
    std::vector<int64_t> index;
    for (int64_t p = -b; p < n + e; ++p) index.push_back(pad_source(mode, p, n));
    x = c.m.take(c, x, axis, index);
  }
  if (x == c.at(0)) x = c.m.emit(c, OpId::k_copy, {x});
  return {x};
}

std::vector<int64_t> dims(const Shape& s) { return {s.begin(), s.end()}; }

std::vector<uint32_t> depth_to_space(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  if (s.ndim() != 4) c.bad("DepthToSpace takes [N, C, H, W]");
  const int64_t b = c.i("blocksize", 0), n = s[0], ch = s[1], h = s[2], w = s[3];
  if (b <= 0 || b > ch || ch % (b * b) != 0) c.bad("blocksize " + std::to_string(b) + " does not divide the channels " + std::to_string(ch) + " by its square");
  const std::string mode = c.s("mode", "DCR");
  uint32_t y;
  if (mode == "DCR") {
    y = c.m.reshape(c, x, {n, b, b, ch / (b * b), h, w});
    y = c.m.emit(c, OpId::k_permute, {y}, Attrs::of(std::vector<int64_t>{0, 3, 4, 1, 5, 2}));
  } else if (mode == "CRD") {
    y = c.m.reshape(c, x, {n, ch / (b * b), b, b, h, w});
    y = c.m.emit(c, OpId::k_permute, {y}, Attrs::of(std::vector<int64_t>{0, 1, 4, 2, 5, 3}));
  } else {
    c.bad("mode '" + mode + "' (DCR or CRD)");
  }
  return {c.m.reshape(c, y, {n, ch / (b * b), h * b, w * b})};
}

std::vector<uint32_t> space_to_depth(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  if (s.ndim() != 4) c.bad("SpaceToDepth takes [N, C, H, W]");
  const int64_t b = c.i("blocksize", 0), n = s[0], ch = s[1], h = s[2], w = s[3];
  if (b <= 0 || b > h || b > w || h % b != 0 || w % b != 0 || ch > lite::kMaxValueElements / (b * b)) c.bad("blocksize " + std::to_string(b) + " does not divide the height and width");
  // DCR (the default) puts the block offsets before the channel, CRD (op set 24's mode) after it.
  const std::string mode = c.s("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") c.bad("mode '" + mode + "' (DCR or CRD)");
  uint32_t y = c.m.reshape(c, x, {n, ch, h / b, b, w / b, b});
  y = c.m.emit(c, OpId::k_permute, {y}, Attrs::of(mode == "DCR" ? std::vector<int64_t>{0, 3, 5, 1, 2, 4} : std::vector<int64_t>{0, 1, 3, 5, 2, 4}));
  return {c.m.reshape(c, y, {n, ch * b * b, h / b, w / b})};
}

// Tile: each repeated axis as a broadcast over a new axis in front of it, merged back.
std::vector<uint32_t> tile(NodeCtx& c) {
  uint32_t x = c.at(0);
  const std::vector<int64_t> repeats = c.m.int_data(c, c.at(1), "repeats");
  const Shape s = c.m.shape(x);
  if ((int)repeats.size() != s.ndim()) c.bad("repeats has " + std::to_string(repeats.size()) + " values for rank " + std::to_string(s.ndim()));
  std::vector<int64_t> out = dims(s);
  for (int d = 0; d < s.ndim(); ++d) {
    if (repeats[d] < 0) c.bad("a negative repeat");
    if (repeats[d] != 0 && out[d] > lite::kMaxValueElements / repeats[d]) check_extent(c, lite::kMaxValueElements + 1);
    out[d] *= repeats[d];
  }
  checked_numel(out, c.where + " result");
  for (int d = 0; d < s.ndim(); ++d) {
    if (repeats[d] == 1) continue;
    std::vector<int64_t> cur = dims(c.m.shape(x)), lifted = cur, wide = cur;
    lifted.insert(lifted.begin() + d, 1);
    wide.insert(wide.begin() + d, repeats[d]);
    const uint32_t y = c.m.emit(c, OpId::k_expand, {c.m.reshape(c, x, lifted)}, Attrs::of(wide));
    cur[d] *= repeats[d];
    x = c.m.reshape(c, y, cur);
  }
  if (x == c.at(0)) x = c.m.emit(c, OpId::k_copy, {x});
  return {x};
}

// Trilu: the cells on the kept side of diagonal k of the last two axes, zeros elsewhere.
std::vector<uint32_t> trilu(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  if (s.ndim() < 2) c.bad("Trilu takes at least 2-D input");
  int64_t k = 0;
  if (c.given(1)) {
    const std::vector<int64_t> kv = c.m.int_data(c, c.in[1], "k");
    if (kv.size() != 1) c.bad("k must hold one value");
    k = kv[0];
  }
  const bool upper = c.i("upper", 1) != 0;
  const int64_t rows = s[s.ndim() - 2], cols = s[s.ndim() - 1];
  checked_numel({rows, cols}, c.where + " mask");
  if (rows * cols > lite::kMaxValueElements) c.unsupported("a Trilu mask over 2^31 cells");
  std::vector<uint8_t> mask((size_t)(rows * cols));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) mask[(size_t)(i * cols + j)] = upper ? (j - i >= k) : (j - i <= k);
  Tensor m = Tensor::empty(Shape{rows, cols}, DType::kBool, Device::cpu());
  if (!mask.empty()) std::memcpy(m.data_ptr(), mask.data(), mask.size());
  return {c.m.emit(c, OpId::k_where, {c.m.constant(m), x, c.m.scalar(0, c.m.dtype(x))})};
}

// CumSum along one axis: a product with a constant triangular matrix of ones (integers in
// float64, exact below 2^53), the axis moved last and back.
std::vector<uint32_t> cumsum(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const std::vector<int64_t> av = c.m.int_data(c, c.at(1), "axis");
  if (av.size() != 1) c.bad("axis must hold one value");
  const int axis = normalize_axis(c, av[0], s.ndim());
  const int64_t n = s[axis];
  if (n > 4096) c.unsupported("CumSum along an axis of over 4096 cells");
  const bool exclusive = c.i("exclusive", 0) != 0, reverse = c.i("reverse", 0) != 0;
  const DType t = c.m.dtype(x);
  const DType compute = is_floating(t) ? t : DType::kFloat64;
  std::vector<double> tri((size_t)(n * n));
  for (int64_t i = 0; i < n; ++i)  // row i: the source cell, column j: the output cell
    for (int64_t j = 0; j < n; ++j) tri[(size_t)(i * n + j)] = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
  const uint32_t m = c.m.cast_to(c, c.m.constant_of(tri, Shape{n, n}), compute);
  const AxisLast last = axis_last(s.ndim(), axis);
  const std::vector<int64_t>&perm = last.perm, &back = last.back;
  uint32_t y = c.m.emit(c, OpId::k_permute, {c.m.cast_to(c, x, compute)}, Attrs::of(perm));
  y = c.m.emit(c, OpId::k_matmul, {y, m});
  y = c.m.emit(c, OpId::k_permute, {y}, Attrs::of(back));
  return {c.m.cast_to(c, y, t)};
}

// InstanceNormalization: each (sample, channel)'s spatial cells normalised, then scaled and shifted.
std::vector<uint32_t> instance_norm(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const int rank = c.m.shape(x).ndim();
  if (rank < 3) c.bad("InstanceNormalization takes [N, C, D1, ...]");
  std::vector<int64_t> axes;
  for (int d = 2; d < rank; ++d) axes.push_back(d);
  std::vector<int64_t> per_channel = {-1};
  for (int d = 2; d < rank; ++d) per_channel.push_back(1);
  const DType t = c.m.dtype(x);
  const uint32_t mean = c.m.emit(c, OpId::k_mean, {x}, Attrs::of(axes, true));
  const uint32_t d = c.m.emit(c, OpId::k_sub, {x, mean});
  const uint32_t var = c.m.emit(c, OpId::k_mean, {c.m.emit(c, OpId::k_mul, {d, d})}, Attrs::of(axes, true));
  const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {var, c.m.scalar(c.f("epsilon", 1e-5), t)})});
  const uint32_t y = c.m.emit(c, OpId::k_mul, {c.m.emit(c, OpId::k_mul, {d, inv}), c.m.reshape(c, c.at(1), per_channel)});
  return {c.m.emit(c, OpId::k_add, {y, c.m.reshape(c, c.at(2), per_channel)})};
}

}  // namespace

// CenterCropPad: each named axis cut to its centred window (the start rounded down) or padded with
// zeros on both sides (the odd cell at the end).
std::vector<uint32_t> center_crop_pad(NodeCtx& c) {
  uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  const std::vector<int64_t> want = c.m.int_data(c, c.at(1), "shape");
  std::vector<int64_t> axes = c.ints("axes");
  if (axes.empty())
    for (int d = 0; d < s.ndim(); ++d) axes.push_back(d);
  if (want.size() != axes.size()) c.bad("shape has " + std::to_string(want.size()) + " values for " + std::to_string(axes.size()) + " axes");
  for (size_t k = 0; k < axes.size(); ++k) {
    const int axis = normalize_axis(c, axes[k], s.ndim());
    const int64_t have = c.m.shape(x)[axis], target = want[k];
    if (target < 0) c.bad("a negative target extent");
    checked_numel({target}, c.where + " target extent");
    if (target < have) {
      const int64_t from = (have - target) / 2;
      x = c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, from, from + target, int64_t{1}));
    } else if (target > have) {
      const int64_t begin = (target - have) / 2;
      x = pad_axis(c, x, axis, begin, target - have - begin, 0.0);
    }
  }
  return {x == c.at(0) ? c.m.emit(c, OpId::k_copy, {x}) : x};
}

// ReverseSequence: each batch entry's first sequence_lens[b] steps reversed, the rest kept; the
// source step of each (step, entry) is computed at run time and gathered along the time axis.
std::vector<uint32_t> reverse_sequence(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  if (s.ndim() < 2) c.bad("ReverseSequence takes an input of rank 2 or more");
  const int64_t time_axis = c.i("time_axis", 0), batch_axis = c.i("batch_axis", 1);
  if (!((time_axis == 0 && batch_axis == 1) || (time_axis == 1 && batch_axis == 0))) c.bad("time_axis and batch_axis must be 0 and 1 in some order");
  const int64_t steps = s[(int)time_axis], batch = s[(int)batch_axis];
  if (c.m.shape(c.at(1)).numel() != batch) c.bad("sequence_lens must hold one length per batch entry");
  std::vector<int64_t> t_index((size_t)steps);
  for (int64_t i = 0; i < steps; ++i) t_index[(size_t)i] = i;
  const bool time_first = time_axis == 0;
  const uint32_t t = c.m.constant_of(t_index, time_first ? Shape{steps, 1} : Shape{1, steps});
  const uint32_t lens = c.m.reshape(c, c.m.cast_to(c, c.at(1), DType::kInt64), time_first ? std::vector<int64_t>{1, batch} : std::vector<int64_t>{batch, 1});
  const uint32_t mirrored = c.m.emit(c, OpId::k_sub, {c.m.emit(c, OpId::k_sub, {lens, c.m.scalar(1, DType::kInt64)}), t});
  uint32_t index = c.m.emit(c, OpId::k_where, {c.m.emit(c, OpId::k_lt, {t, lens}), mirrored, t});
  std::vector<int64_t> lifted = {s[0], s[1]};
  for (int d = 2; d < s.ndim(); ++d) lifted.push_back(1);
  index = c.m.emit(c, OpId::k_expand, {c.m.reshape(c, index, lifted)}, Attrs::of(dims(s)));
  return {c.m.emit(c, OpId::k_gather, {x, index}, Attrs::of(time_axis))};
}

void add_layout_ops(HandlerTable& t) {
  t["ReverseSequence"] = reverse_sequence;
  t["CenterCropPad"] = center_crop_pad;
  t["Slice"] = slice;
  t["Pad"] = pad;
  t["DepthToSpace"] = depth_to_space;
  t["SpaceToDepth"] = space_to_depth;
  t["Tile"] = tile;
  t["Trilu"] = trilu;
  t["CumSum"] = cumsum;
  t["InstanceNormalization"] = instance_norm;
}

}  // namespace spore::onnx::detail
