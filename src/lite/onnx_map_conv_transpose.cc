// ONNX ConvTranspose (1-D and 2-D) onto the registry's conv2d_grad_input (NOTE [ONNX]): a
// transposed convolution is the gradient of a convolution with respect to its input, and
// ConvTranspose's weight [C_in, C_out / group, kh, kw] is exactly that convolution's weight. It runs
// unpadded; the pads are then cut off (or, where output_padding or output_shape ask for more, zero
// cells added) per side, and the bias added per channel.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> conv_transpose(NodeCtx& c) {
  const Spatial sp(c, c.at(0));
  const uint32_t x = sp.in(c.at(0));
  if (c.m.shape(c.at(1)).ndim() != c.m.shape(c.at(0)).ndim()) c.bad("the weight's rank differs from the input's");
  const uint32_t w = sp.in(c.at(1));
  const Shape& xs = c.m.shape(x);
  const Shape& ws = c.m.shape(w);
  const int64_t group = c.i("group", 1);
  if (group <= 0 || xs[1] != ws[0] || ws[0] % group != 0) c.bad("the weight's first extent must be the input channels, a multiple of group");
  const std::vector<int64_t> kernel = {ws[2], ws[3]};
  if (c.has("kernel_shape") && sp.ints("kernel_shape", 1) != kernel) c.bad("kernel_shape does not match the weight's shape");
  const std::vector<int64_t> strides = sp.ints("strides", 1), dil = sp.ints("dilations", 1), out_pad = sp.ints("output_padding", 0);
  std::vector<int64_t> pads = sp.pads();  // [top, left, bottom, right]
  // Hostile attributes are refused before any extent is computed from them (no overflow).
  auto in_range = [](int64_t v) { return v >= -lite::kMaxElements && v <= lite::kMaxElements; };
  for (int d = 0; d < 2; ++d) {
    if (strides[d] <= 0 || dil[d] <= 0) c.bad("strides and dilations must be positive");
    if (out_pad[d] < 0) c.bad("a negative output_padding");
    if (!in_range(strides[d]) || !in_range(dil[d]) || !in_range(out_pad[d]) || !in_range(pads[d]) || !in_range(pads[d + 2]))
      c.bad("a stride, dilation, pad or output_padding beyond 2^40");
    if ((double)(xs[2 + d] - 1) * strides[d] + (double)(kernel[d] - 1) * dil[d] + 1 > (double)lite::kMaxValueElements)
      c.unsupported("a ConvTranspose output over Lite's 2^31 elements per value");
  }
  // The unpadded extent of each spatial axis.
  int64_t full[2];
  for (int d = 0; d < 2; ++d) full[d] = (xs[2 + d] - 1) * strides[d] + (kernel[d] - 1) * dil[d] + 1;
  const std::string auto_pad = c.s("auto_pad", "NOTSET");
  std::vector<int64_t> out_shape;
  if (c.has("output_shape")) {
    out_shape = sp.ints("output_shape", 1);
  } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    out_shape = {xs[2] * strides[0], xs[3] * strides[1]};
  }
  if (!out_shape.empty()) {  // the pads follow from the output's extent (the spec's formula)
    for (int d = 0; d < 2; ++d) {
      if (out_shape[d] < 0 || out_shape[d] > lite::kMaxValueElements) c.bad("output_shape " + std::to_string(out_shape[d]));
      const int64_t total = full[d] + out_pad[d] - out_shape[d];
      // A negative total pads with zeros beyond the unpadded result.
      const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
      const bool upper = auto_pad == "SAME_UPPER";  // otherwise the larger half in front, as the spec says
      pads[d] = upper ? half : total - half;
      pads[d + 2] = total - pads[d];
    }
  } else if (auto_pad != "NOTSET" && auto_pad != "VALID") {
    c.bad("auto_pad '" + auto_pad + "' is not an ONNX value");
  } else if (auto_pad == "VALID") {
    pads = {0, 0, 0, 0};
  }
  for (int d = 0; d < 2; ++d) {
    if (full[d] <= 0) c.bad("the input and kernel give no output cells");
  }
  checked_numel({xs[0], ws[1] * group, full[0], full[1]}, c.where + " result");
  const std::vector<int64_t> input_shape = {xs[0], ws[1] * group, full[0], full[1]};
  uint32_t y = c.m.emit(c, OpId::k_conv2d_grad_input, {x, w},
                        Attrs::of(input_shape, strides, std::vector<int64_t>{0, 0}, dil, group));
  // Cut the pads off each side; output_padding (and a negative pad) adds zeros at the end.
  for (int d = 0; d < 2; ++d) y = pad_axis(c, y, 2 + d, -pads[d], out_pad[d] - pads[d + 2], 0.0);
  if (c.given(2)) y = c.m.emit(c, OpId::k_add, {y, c.m.reshape(c, c.in[2], {-1, 1, 1})});
  return {sp.out(y)};
}

}  // namespace

void add_conv_transpose_ops(HandlerTable& t) { t["ConvTranspose"] = conv_transpose; }

}  // namespace spore::onnx::detail
