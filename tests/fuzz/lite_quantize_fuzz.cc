// libFuzzer target: `spore lite quantize` (src/lite/onnx_quantize.cc, NOTE [Dynamic int8
// products]): protobuf parsing, initializers' data against their shapes, Gemm's attributes and C,
// Conv's weight and bias, the weight's quantization, in both output forms. Seeds: the quantize
// fixtures and the onnx target's models.
// Contract checked: any input either throws spore::Error or gives bytes that parse as ONNX again,
// with no more products to quantize (quantizing the output rewrites nothing).
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/lite_quantize.h"

namespace {

void check(const uint8_t* data, size_t size, spore::lite::QuantizeFormat format) {
  using namespace spore;
  lite::QuantizeOptions options;
  options.format = format;
  lite::QuantizeReport report;
  std::string out;
  try {
    out = lite::quantize_onnx_bytes(std::span<const uint8_t>(data, size), "fuzz", report, options);
  } catch (const Error&) {
    return;
  }
  ::onnx::ModelProto again;
  fuzz::require(again.ParseFromString(out), "the quantized model does not parse");
  fuzz::require(report.convolutions <= report.quantized, "more convolutions than quantized nodes");
  lite::QuantizeReport second;
  std::string twice;
  try {
    twice = lite::quantize_onnx_bytes(std::span<const uint8_t>((const uint8_t*)out.data(), out.size()), "fuzz", second,
                                      options);
  } catch (const Error&) {
    return;  // a model the first pass passed through unread (another node's bad data) may still fail
  }
  fuzz::require(second.quantized == 0, "quantizing a quantized model rewrote a node again");
}

}  // namespace

// Both forms on every input: the dynamic one (DynamicQuantizeMatMul, ConvInteger chains) and QDQ.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check(data, size, spore::lite::QuantizeFormat::kDynamic);
  check(data, size, spore::lite::QuantizeFormat::kQdq);
  return 0;
}
