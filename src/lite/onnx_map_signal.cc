// ONNX's signal ops written with registry ops (NOTE [ONNX attention and losses]): the
// Hann / Hamming / Blackman windows (constants of a known size, in the spec's formulas), and DFT
// (op sets 17 and 20: forward, inverse, one-sided forward, one-sided inverse = irfft) as products
// of the signal's real and imaginary parts with constant cosine and sine matrices in float64,
// along the DFT axis moved last and back; the signal is zero-padded or cut to dft_length first.
// STFT is that DFT over the signal's frames (gathered at frame_step, known when mapping) times
// the window, along the frame axis. MelWeightMatrix is a constant of the sizes and edges known when the graph is mapped, in the
// reference's formula (mel edges in float32, the bins floored from float64).
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr double kPi = 3.14159265358979323846;
// A DFT whose matrices would exceed this many cells is refused (they are constants).
constexpr int64_t kMaxDftCells = int64_t{1} << 22;

Handler window(const std::string& op) {
  return [op](NodeCtx& c) {
    const std::vector<int64_t> sv = c.m.int_data(c, c.at(0), "size");
    if (sv.size() != 1) c.bad("size must hold one value");
    const int64_t n = sv[0];
    if (n < 0 || n > lite::kMaxValueElements) c.bad("size " + std::to_string(n));
    DType t = DType::kFloat32;
    if (!dtype_of((int32_t)c.i("output_datatype", 1), t)) c.unsupported("output_datatype " + onnx_type_name((int32_t)c.i("output_datatype", 1)));
    const double denom = c.i("periodic", 1) != 0 ? (double)n : (double)n - 1;
    std::vector<double> w((size_t)n);
    for (int64_t i = 0; i < n; ++i) {
      const double a = denom > 0 ? 2 * kPi * (double)i / denom : 0;
      if (op == "HannWindow") w[(size_t)i] = 0.5 - 0.5 * std::cos(a);
      else if (op == "HammingWindow") w[(size_t)i] = 25.0 / 46 - 21.0 / 46 * std::cos(a);
      else w[(size_t)i] = 0.42 - 0.5 * std::cos(a) + 0.08 * std::cos(2 * a);
    }
    return std::vector<uint32_t>{c.m.cast_to(c, c.m.constant_of(w, Shape{n}), t)};
  };
}

std::vector<uint32_t> dft(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  const int rank = xs.ndim();
  if (rank < 2 || (xs[rank - 1] != 1 && xs[rank - 1] != 2)) c.bad("the signal must be [..., 1] (real) or [..., 2] (complex)");
  const DType t = m.dtype(x);
  if (!is_floating(t)) c.bad("the signal must be floating-point");
  int64_t axis_v = m.opset >= 20 ? -2 : c.i("axis", 1);
  if (m.opset >= 20 && c.given(2)) {
    const std::vector<int64_t> a = m.int_data(c, c.at(2), "axis");
    if (a.size() != 1) c.bad("axis must hold one value");
    axis_v = a[0];
  }
  const int axis = normalize_axis(c, axis_v, rank);
  if (axis == rank - 1) c.bad("the DFT axis cannot be the last (real / imaginary) axis");
  const bool inverse = c.i("inverse", 0) != 0, onesided = c.i("onesided", 0) != 0;
  int64_t len = inverse && onesided ? 2 * (xs[axis] - 1) : xs[axis];
  if (c.given(1)) {
    const std::vector<int64_t> l = m.int_data(c, c.at(1), "dft_length");
    if (l.size() != 1) c.bad("dft_length must hold one value");
    len = l[0];
  }
  if (len < 1) c.bad("dft_length " + std::to_string(len) + " must be at least 1");
  const int64_t in = inverse && onesided ? len / 2 + 1 : len, out = !inverse && onesided ? len / 2 + 1 : len;
  if (in * out > kMaxDftCells) c.unsupported("a DFT of length " + std::to_string(len) + " (its matrices would exceed 2^22 cells)");
  // Real and imaginary parts, [..., n, ...] in float64, cut or zero-padded to `in` along the axis.
  auto part = [&](int64_t k) {
    const Shape s = m.shape(x);
    std::vector<int64_t> shape(s.begin(), s.end() - 1);
    uint32_t v = m.reshape(c, m.emit(c, OpId::k_slice, {m.cast_to(c, x, DType::kFloat64)}, Attrs::of((int64_t)(rank - 1), k, k + 1, int64_t{1})), shape);
    return pad_axis(c, v, axis, 0, in - xs[axis], 0.0);
  };
  const bool complex = xs[rank - 1] == 2;
  const AxisLast last = axis_last(rank - 1, axis);
  auto moved = [&](uint32_t v) { return m.emit(c, OpId::k_permute, {v}, Attrs::of(last.perm)); };
  const uint32_t re = moved(part(0)), im = complex ? moved(part(1)) : kNone;
  // Y_re = re * A + im * B, Y_im = re * C + im * D over [in, out] matrices of cos and sin.
  std::vector<double> a((size_t)(in * out)), b(a.size()), cm(a.size()), d(a.size());
  for (int64_t i = 0; i < in; ++i)
    for (int64_t o = 0; o < out; ++o) {
      const double angle = 2 * kPi * (double)((i * o) % len) / (double)len;
      const double cs = std::cos(angle), sn = std::sin(angle);
      double w = 1;
      if (inverse) w = onesided ? ((i == 0 || 2 * i == len) ? 1.0 : 2.0) / (double)len : 1.0 / (double)len;
      const size_t at = (size_t)(i * out + o);
      if (inverse) a[at] = w * cs, b[at] = -w * sn, cm[at] = w * sn, d[at] = w * cs;
      else a[at] = cs, b[at] = sn, cm[at] = -sn, d[at] = cs;
    }
  auto product = [&](const std::vector<double>& on_re, const std::vector<double>& on_im) {
    uint32_t y = m.emit(c, OpId::k_matmul, {re, m.constant_of(on_re, Shape{in, out})});
    if (im != kNone) y = m.emit(c, OpId::k_add, {y, m.emit(c, OpId::k_matmul, {im, m.constant_of(on_im, Shape{in, out})})});
    const uint32_t back = m.emit(c, OpId::k_permute, {y}, Attrs::of(last.back));
    const Shape s = m.shape(back);
    std::vector<int64_t> shape(s.begin(), s.end());
    shape.push_back(1);
    return m.reshape(c, back, shape);
  };
  const uint32_t yr = product(a, b);
  if (inverse && onesided) return {m.cast_to(c, yr, t)};
  const uint32_t yi = product(cm, d);
  return {m.cast_to(c, m.emit(c, OpId::k_concat, {yr, yi}, Attrs::of((int64_t)(rank - 1))), t)};
}

}  // namespace

std::vector<uint32_t> stft(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() != 3 || (xs[2] != 1 && xs[2] != 2)) c.bad("the signal must be [batch, length, 1 or 2]");
  auto one = [&](size_t k, const char* what) {
    const std::vector<int64_t> v = m.int_data(c, c.at(k), what);
    if (v.size() != 1) c.bad(std::string(what) + " must hold one value");
    return v[0];
  };
  const int64_t step = one(1, "frame_step");
  const int64_t len = c.given(3) ? one(3, "frame_length") : c.given(2) ? m.shape(c.at(2)).numel() : xs[1];
  if (step < 1 || len < 1 || len > xs[1]) c.bad("frame_step and frame_length must be positive, the frame no longer than the signal");
  if (c.given(2) && m.shape(c.at(2)).numel() != len) c.bad("the window must have frame_length values");
  const int64_t frames = 1 + (xs[1] - len) / step;
  if (frames * len > kMaxDftCells) c.unsupported("an STFT over " + std::to_string(frames * len) + " framed samples (at most 2^22)");
  std::vector<int64_t> at((size_t)(frames * len));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t j = 0; j < len; ++j) at[(size_t)(f * len + j)] = f * step + j;
  uint32_t framed = m.reshape(c, m.take(c, x, 1, at), {xs[0], frames, len, xs[2]});
  if (c.given(2)) framed = m.emit(c, OpId::k_mul, {framed, m.reshape(c, m.cast_to(c, c.at(2), m.dtype(x)), {1, 1, len, 1})});
  // The DFT of each frame: DFT's own mapping, along axis 2, one-sided as STFT's attribute says.
  NodeProto d;
  d.set_op_type("DFT");
  for (auto [name, value] : {std::pair{"onesided", c.i("onesided", 1)}, std::pair{"axis", int64_t{2}}}) {
    AttributeProto* a = d.add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(value);
  }
  NodeCtx inner{m, d, {framed, kNone, m.constant_of(std::vector<int64_t>{2}, Shape{})}, c.where};
  return dft(inner);
}

std::vector<uint32_t> mel_weight_matrix(NodeCtx& c) {
  Mapper& m = c.m;
  auto one = [&](size_t k, const char* what) {
    const std::vector<double> v = m.float_data(c, c.at(k), what);
    if (v.size() != 1) c.bad(std::string(what) + " must hold one value");
    return v[0];
  };
  const int64_t mels = (int64_t)one(0, "num_mel_bins"), dft = (int64_t)one(1, "dft_length"), rate = (int64_t)one(2, "sample_rate");
  const float lower = (float)one(3, "lower_edge_hertz"), upper = (float)one(4, "upper_edge_hertz");
  if (mels < 1 || dft < 1 || rate < 1 || mels > 4096 || dft > (int64_t{1} << 20))
    c.bad("num_mel_bins, dft_length and sample_rate must be positive (at most 4,096 bins and 2^20 points)");
  DType out = DType::kFloat32;
  if (c.has("output_datatype") && !dtype_of((int32_t)c.i("output_datatype", 1), out))
    c.unsupported("output_datatype " + onnx_type_name((int32_t)c.i("output_datatype", 1)));
  const int64_t bins = dft / 2 + 1;
  const float ln10 = (float)std::log(10.0);
  const float low_mel = 2595.0f * std::log1p(lower / 700.0f) / ln10, high_mel = 2595.0f * std::log1p(upper / 700.0f) / ln10;
  const float step = (high_mel - low_mel) / (float)(mels + 2);
  std::vector<int64_t> edge((size_t)(mels + 2));
  for (int64_t i = 0; i < mels + 2; ++i) {
    const double mel = (double)i * (double)step + (double)low_mel;
    const double hz = 700.0 * std::expm1(mel / 2595.0 * std::log(10.0));
    edge[(size_t)i] = (int64_t)std::floor((double)(dft + 1) * hz / (double)rate);
  }
  std::vector<double> w((size_t)(bins * mels), 0.0);
  auto set = [&](int64_t j, int64_t i, double v) {
    if (j < 0 || j >= bins) c.bad("a mel band edge falls outside the spectrogram's bins (upper_edge_hertz above sample_rate / 2?)");
    w[(size_t)(j * mels + i)] = v;
  };
  for (int64_t i = 0; i < mels; ++i) {
    const int64_t lo = edge[(size_t)i], mid = edge[(size_t)i + 1], hi = edge[(size_t)i + 2];
    if (mid == lo) set(mid, i, 1.0);
    else
      for (int64_t j = lo; j <= mid; ++j) set(j, i, (double)(j - lo) / (double)(mid - lo));
    for (int64_t j = mid; j < hi; ++j) set(j, i, (double)(hi - j) / (double)(hi - mid));
  }
  const Tensor t = Tensor::from_vector(w, Shape{bins, mels});
  return {m.constant(out == DType::kFloat64 ? t : dispatch1(OpId::k_cast, {t}, Attrs::of(out)))};
}

void add_signal_ops(HandlerTable& t) {
  t["MelWeightMatrix"] = mel_weight_matrix;
  t["STFT"] = stft;
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) t[op] = window(op);
  t["DFT"] = dft;
}

}  // namespace spore::onnx::detail
