// ONNX's NonMaxSuppression (NOTE [ONNX attention and losses]). Its output's row count depends on
// the boxes' and scores' values and Lite has no op that makes a data-dependent shape, so it is
// computed when the graph is mapped, from values known then (constants, or predict's inputs:
// the graph is then mapped at predict and again when those values change, NOTE [ONNX dynamic
// shapes]); the selected [batch, class, box] rows become a constant. Per batch and class: the
// boxes above score_threshold (when given) by falling score, ties to the lower index, each kept
// unless its IoU with one already kept exceeds iou_threshold, at most max_output_boxes_per_class.
// The greedy pass is quadratic, so more than 4,096 boxes, or 2^24 box pairs over all classes, are
// refused (kUnsupported) rather than stalling predict.
#include <algorithm>
#include <numeric>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

constexpr int64_t kMaxBoxes = 4096;

struct Box {
  double x0, y0, x1, y1;
};

Box corners(const double* b, bool center) {
  if (center) return {b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2};
  return {std::min(b[1], b[3]), std::min(b[0], b[2]), std::max(b[1], b[3]), std::max(b[0], b[2])};
}

// Whether b is suppressed by a: their IoU above the threshold (empty boxes suppress nothing).
bool suppresses(const Box& a, const Box& b, double threshold) {
  const double ix = std::min(a.x1, b.x1) - std::max(a.x0, b.x0), iy = std::min(a.y1, b.y1) - std::max(a.y0, b.y0);
  if (ix <= 0 || iy <= 0) return false;
  const double inter = ix * iy, area_a = (a.x1 - a.x0) * (a.y1 - a.y0), area_b = (b.x1 - b.x0) * (b.y1 - b.y0);
  const double uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

std::vector<uint32_t> non_max_suppression(NodeCtx& c) {
  Mapper& m = c.m;
  const Shape bs = m.shape(c.at(0)), ss = m.shape(c.at(1));
  if (bs.ndim() != 3 || bs[2] != 4) c.bad("boxes must be [batches, boxes, 4]");
  if (ss.ndim() != 3 || ss[0] != bs[0] || ss[2] != bs[1]) c.bad("scores must be [batches, classes, boxes] for boxes [batches, boxes, 4]");
  const int64_t batches = bs[0], n = bs[1], classes = ss[1];
  if (n > kMaxBoxes || (double)batches * (double)classes * (double)n * (double)n > (double)(int64_t{1} << 24))
    c.unsupported("NonMaxSuppression over " + std::to_string(n) + " boxes x " + std::to_string(batches * classes) +
                  " classes (it runs when the graph is mapped: at most 4096 boxes and 2^24 box pairs)");
  auto scalar = [&](size_t k, double dflt, bool* present) {
    *present = false;
    if (!c.given(k)) return dflt;
    const Tensor t = m.data(c, c.at(k), "NonMaxSuppression's thresholds and count (known when the graph is mapped)");
    if (t.numel() == 0) return dflt;
    if (t.numel() != 1) c.bad("max_output_boxes_per_class, iou_threshold and score_threshold hold one value each");
    *present = true;
    return t.contiguous().to(DType::kFloat64).to_vector<double>()[0];
  };
  bool has_max, has_iou, has_score;
  const double max_out = std::max(0.0, scalar(2, 0, &has_max)), iou = scalar(3, 0, &has_iou), score_min = scalar(4, 0, &has_score);
  const std::vector<double> boxes = m.data(c, c.at(0), "boxes (NonMaxSuppression runs when the graph is mapped)").contiguous().to(DType::kFloat64).to_vector<double>();
  const std::vector<double> scores = m.data(c, c.at(1), "scores (NonMaxSuppression runs when the graph is mapped)").contiguous().to(DType::kFloat64).to_vector<double>();
  const bool center = c.i("center_point_box", 0) != 0;
  std::vector<int64_t> rows;
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<Box> box((size_t)n);
    for (int64_t i = 0; i < n; ++i) box[(size_t)i] = corners(&boxes[(size_t)((b * n + i) * 4)], center);
    for (int64_t k = 0; k < classes; ++k) {
      const double* s = &scores[(size_t)((b * classes + k) * n)];
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!has_score || s[i] > score_min) order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t z) { return s[a] > s[z]; });
      std::vector<int64_t> kept;
      for (int64_t i : order) {
        if ((double)kept.size() >= max_out) break;
        bool keep = true;
        for (int64_t j : kept) keep = keep && !suppresses(box[(size_t)j], box[(size_t)i], iou);
        if (keep) kept.push_back(i), rows.insert(rows.end(), {b, k, i});
      }
    }
  }
  return {m.constant_of(rows, Shape{(int64_t)rows.size() / 3, 3})};
}

}  // namespace

void add_nms_ops(HandlerTable& t) { t["NonMaxSuppression"] = non_max_suppression; }

}  // namespace spore::onnx::detail
