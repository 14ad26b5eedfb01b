// ONNX ops that write values to computed places, written with registry ops (NOTE [ONNX attention
// and losses]): TensorScatter (op set 24's KV-cache write: each cache slot along the axis reads
// the update step slot - write_index[b], wrapped in circular mode, where that step exists) and
// Col2Im (each column entry added at its image cell: one scatter_add over the padded image with a
// constant index, the padding then cut off).
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> tensor_scatter(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t past = c.at(0), update = c.at(1);
  const Shape ps = m.shape(past), us = m.shape(update);
  if (ps.ndim() < 2 || us.ndim() != ps.ndim()) c.bad("past_cache and update must have the same rank (2 or more)");
  const int axis = normalize_axis(c, c.i("axis", -2), ps.ndim());
  if (axis == 0) c.bad("axis cannot be the batch axis 0");
  for (int d = 0; d < ps.ndim(); ++d)
    if (d != axis && ps[d] != us[d]) c.bad("update differs from past_cache outside the sequence axis");
  const int64_t max_len = ps[axis], len = us[axis], batch = ps[0];
  if (len > max_len) c.bad("the update is longer than the cache");
  const std::string mode = c.s("mode", "linear");
  if (mode != "linear" && mode != "circular") c.bad("mode '" + mode + "' (linear or circular)");
  if (len == 0) return {m.emit(c, OpId::k_copy, {past})};
  // slot - write_index per (batch, slot), in float64 (exact for these extents).
  std::vector<int64_t> at_shape((size_t)ps.ndim(), 1), b_shape((size_t)ps.ndim(), 1);
  at_shape[(size_t)axis] = max_len;
  b_shape[0] = batch;
  std::vector<double> slots((size_t)max_len);
  for (int64_t i = 0; i < max_len; ++i) slots[(size_t)i] = (double)i;
  uint32_t step = m.constant_of(slots, Shape(at_shape));
  if (c.given(2)) {
    if (m.shape(c.at(2)).numel() != batch) c.bad("write_indices must hold one index per batch entry");
    step = m.emit(c, OpId::k_sub, {step, m.reshape(c, m.cast_to(c, c.at(2), DType::kFloat64), b_shape)});
  }
  if (mode == "circular") {
    const uint32_t n = m.scalar((double)max_len, DType::kFloat64);
    step = m.emit(c, OpId::k_sub, {step, m.emit(c, OpId::k_mul, {floor_of(c, m.emit(c, OpId::k_div, {step, n})), n})});
  }
  const uint32_t written = m.emit(c, OpId::k_logical_and, {m.emit(c, OpId::k_ge, {step, m.scalar(0, DType::kFloat64)}),
                                                          m.emit(c, OpId::k_lt, {step, m.scalar((double)len, DType::kFloat64)})});
  const uint32_t safe = m.cast_to(c, m.emit(c, OpId::k_where, {written, step, m.scalar(0, DType::kFloat64)}), DType::kInt64);
  const std::vector<int64_t> full(ps.begin(), ps.end());
  const uint32_t index = m.emit(c, OpId::k_expand, {safe}, Attrs::of(full));
  const uint32_t taken = m.emit(c, OpId::k_gather, {update, index}, Attrs::of((int64_t)axis));
  return {m.emit(c, OpId::k_where, {m.emit(c, OpId::k_expand, {written}, Attrs::of(full)), taken, past})};
}

std::vector<uint32_t> col2im(NodeCtx& c) {
  Mapper& m = c.m;
  const uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  if (xs.ndim() != 3) c.bad("input must be [N, C * prod(block_shape), L]");
  const std::vector<int64_t> image = m.int_data(c, c.at(1), "image_shape"), block = m.int_data(c, c.at(2), "block_shape");
  const size_t r = image.size();
  if (r < 1 || block.size() != r) c.bad("image_shape and block_shape must have one value per spatial axis");
  const std::vector<int64_t> strides = c.ints("strides", std::vector<int64_t>(r, 1)), dil = c.ints("dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = c.ints("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || dil.size() != r || pads.size() != 2 * r) c.bad("strides, dilations and pads must match the spatial rank");
  int64_t kernel = 1, blocks = 1, padded_cells = 1;
  std::vector<int64_t> count(r), padded(r);
  for (size_t d = 0; d < r; ++d) {
    if (image[d] < 1 || block[d] < 1 || strides[d] < 1 || dil[d] < 1 || pads[d] < 0 || pads[d + r] < 0) c.bad("extents, strides and dilations must be >= 1, pads >= 0");
    padded[d] = image[d] + pads[d] + pads[d + r];
    const int64_t span = dil[d] * (block[d] - 1) + 1;
    if (span > padded[d]) c.bad("the dilated block is larger than the padded image");
    count[d] = (padded[d] - span) / strides[d] + 1;
    kernel *= block[d], blocks *= count[d], padded_cells *= padded[d];
    if (kernel * blocks > (int64_t{1} << 24) || padded_cells > (int64_t{1} << 31)) c.unsupported("a Col2Im over 2^24 column entries");
  }
  if (xs[1] % kernel != 0 || xs[2] != blocks) c.bad("the input's extents do not match block_shape and the blocks' count");
  const int64_t n = xs[0], ch = xs[1] / kernel;
  // The padded image cell of column entry (k, l), k over the block's cells, l over the blocks.
  std::vector<int64_t> index((size_t)(kernel * blocks));
  for (int64_t k = 0; k < kernel; ++k)
    for (int64_t l = 0; l < blocks; ++l) {
      int64_t kr = k, lr = l, cell = 0, stride = 1;
      for (size_t d = r; d-- > 0;) {
        const int64_t kd = kr % block[d], ld = lr % count[d];
        kr /= block[d], lr /= count[d];
        cell += (ld * strides[d] + kd * dil[d]) * stride;
        stride *= padded[d];
      }
      index[(size_t)(k * blocks + l)] = cell;
    }
  const uint32_t src = m.reshape(c, x, {n, ch, kernel * blocks});
  const uint32_t idx = m.emit(c, OpId::k_expand, {m.constant_of(index, Shape{1, 1, kernel * blocks})}, Attrs::of(std::vector<int64_t>{n, ch, kernel * blocks}));
  const uint32_t zeros = m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{n, ch, padded_cells}, 0.0, m.dtype(x)));
  uint32_t y = m.emit(c, OpId::k_scatter_add, {zeros, idx, src}, Attrs::of(int64_t{2}));
  std::vector<int64_t> shape = {n, ch};
  shape.insert(shape.end(), padded.begin(), padded.end());
  y = m.reshape(c, y, shape);
  for (size_t d = 0; d < r; ++d) y = pad_axis(c, y, (int)(2 + d), -pads[d], -pads[d + r], 0.0);
  return {y};
}

}  // namespace

void add_scatter_ops(HandlerTable& t) {
  t["TensorScatter"] = tensor_scatter;
  t["Col2Im"] = col2im;
}

}  // namespace spore::onnx::detail
