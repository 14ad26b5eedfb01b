// ONNX RoiAlign (op sets 10 and 16) with registry ops, for regions known when the graph is mapped
// (constants, or predict's inputs; regions computed by the graph are refused by name). Each
// region's sampling points and their bilinear corner weights are computed then, as the spec's
// reference computes them, into constant matrices over the image's H * W cells; the region is
// then products of its image's [C, H * W] with them: the average mode one matrix (weights / count),
// the max mode one per corner (ONNX Runtime's and the reference's max of the weighted corner
// values, then over the sampling points).
#include <algorithm>
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// More cells than this in a region's weight matrices are refused (they are constants).
constexpr int64_t kMaxRoiCells = int64_t{1} << 24;

std::vector<uint32_t> roi_align(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() != 4) c.bad("X must be [N, C, H, W]");
  const int64_t channels = xs[1], height = xs[2], width = xs[3];
  const std::vector<double> rois = m.float_data(c, c.at(1), "rois (RoiAlign's regions must be known when the graph is mapped)");
  const std::vector<int64_t> batch = m.int_data(c, c.at(2), "batch_indices");
  const int64_t n = (int64_t)batch.size();
  if ((int64_t)rois.size() != 4 * n) c.bad("rois must be [num_rois, 4] with one batch index per region");
  const std::string mode = c.s("mode", "avg");
  if (mode != "avg" && mode != "max") c.bad("mode '" + mode + "'");
  const int64_t oh = c.i("output_height", 1), ow = c.i("output_width", 1), ratio = c.i("sampling_ratio", 0);
  const double scale = c.f("spatial_scale", 1.0);
  if (oh < 1 || ow < 1 || ratio < 0) c.bad("output sizes must be positive and sampling_ratio not negative");
  const bool half_pixel = m.opset >= 16 && c.s("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const DType t = m.dtype(x);
  std::vector<uint32_t> outs;
  for (int64_t r = 0; r < n; ++r) {
    if (batch[(size_t)r] < 0 || batch[(size_t)r] >= xs[0]) c.bad("batch index " + std::to_string(batch[(size_t)r]) + " is out of range");
    const double off = half_pixel ? 0.5 : 0.0;
    const double x0 = rois[(size_t)(4 * r)] * scale - off, y0 = rois[(size_t)(4 * r + 1)] * scale - off;
    double rw = rois[(size_t)(4 * r + 2)] * scale - off - x0, rh = rois[(size_t)(4 * r + 3)] * scale - off - y0;
    if (!half_pixel) rw = std::max(rw, 1.0), rh = std::max(rh, 1.0);
    const double bh = rh / (double)oh, bw = rw / (double)ow;
    const int64_t gh = ratio > 0 ? ratio : (int64_t)std::ceil(rh / (double)oh), gw = ratio > 0 ? ratio : (int64_t)std::ceil(rw / (double)ow);
    const int64_t samples = std::max<int64_t>(gh * gw, 1), cells = oh * ow, hw = height * width;
    const bool avg = mode == "avg";
    const int64_t rows = avg ? cells : cells * samples;
    if (rows * hw * (avg ? 1 : 4) > kMaxRoiCells) c.unsupported("a RoiAlign region whose sampling matrices exceed 2^24 cells");
    std::vector<std::vector<double>> w((size_t)(avg ? 1 : 4), std::vector<double>((size_t)(rows * hw), 0.0));
    for (int64_t ph = 0; ph < oh; ++ph)
      for (int64_t pw = 0; pw < ow; ++pw)
        for (int64_t iy = 0; iy < gh; ++iy)
          for (int64_t ix = 0; ix < gw; ++ix) {
            double y = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
            double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
            if (y < -1.0 || y > (double)height || xx < -1.0 || xx > (double)width) continue;  // weights 0
            y = std::max(y, 0.0), xx = std::max(xx, 0.0);
            int64_t ylo = (int64_t)y, xlo = (int64_t)xx, yhi, xhi;
            if (ylo >= height - 1) yhi = ylo = height - 1, y = (double)ylo;
            else yhi = ylo + 1;
            if (xlo >= width - 1) xhi = xlo = width - 1, xx = (double)xlo;
            else xhi = xlo + 1;
            const double ly = y - (double)ylo, lx = xx - (double)xlo, hy = 1 - ly, hx = 1 - lx;
            const int64_t pos[4] = {ylo * width + xlo, ylo * width + xhi, yhi * width + xlo, yhi * width + xhi};
            const double cw[4] = {hy * hx, hy * lx, ly * hx, ly * lx};
            const int64_t cell = ph * ow + pw, row = avg ? cell : cell * samples + iy * gw + ix;
            for (int k = 0; k < 4; ++k) {
              if (avg) w[0][(size_t)(row * hw + pos[k])] += cw[k] / (double)samples;
              else w[(size_t)k][(size_t)(row * hw + pos[k])] += cw[k];
            }
          }
    const int64_t b = batch[(size_t)r];
    const uint32_t image = m.reshape(c, m.emit(c, OpId::k_slice, {x}, Attrs::of(int64_t{0}, b, b + 1, int64_t{1})), {channels, hw});
    auto product = [&](const std::vector<double>& weights) {  // [C, rows]
      const uint32_t mat = m.constant(dispatch1(OpId::k_cast, {Tensor::from_vector(weights, Shape{hw, rows})}, Attrs::of(t)));
      return m.emit(c, OpId::k_matmul, {image, mat});
    };
    // The matrices were filled [rows, hw]; the products want [hw, rows].
    for (auto& mat : w) {
      std::vector<double> tr(mat.size());
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < hw; ++j) tr[(size_t)(j * rows + i)] = mat[(size_t)(i * hw + j)];
      mat.swap(tr);
    }
    uint32_t y;
    if (avg) {
      y = product(w[0]);
    } else {
      y = product(w[0]);
      for (int k = 1; k < 4; ++k) y = m.emit(c, OpId::k_maximum, {y, product(w[(size_t)k])});
      y = m.emit(c, OpId::k_max, {m.reshape(c, y, {channels, cells, samples})}, Attrs::of(std::vector<int64_t>{2}, false));
    }
    outs.push_back(m.reshape(c, y, {1, channels, oh, ow}));
  }
  if (outs.empty()) c.unsupported("RoiAlign over no regions");
  return {outs.size() == 1 ? outs[0] : m.emit(c, OpId::k_concat, outs, Attrs::of(int64_t{0}))};
}

}  // namespace

void add_roi_align_ops(HandlerTable& t) { t["RoiAlign"] = roi_align; }

}  // namespace spore::onnx::detail
