// libFuzzer target: `spore lite quantize` (src/lite/onnx_quantize.cc, NOTE [Dynamic int8
// products]): protobuf parsing, initializers' data against their shapes, Gemm's attributes and C,
// the weight's quantization. Seeds: the quantize fixtures and the onnx target's models.
// Contract checked: any input either throws spore::Error or gives bytes that parse as ONNX again,
// with no more products to quantize (quantizing the output rewrites nothing).
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/lite_quantize.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  lite::QuantizeReport report;
  std::string out;
  try {
    out = lite::quantize_onnx_bytes(std::span<const uint8_t>(data, size), "fuzz", report);
  } catch (const Error&) {
    return 0;
  }
  ::onnx::ModelProto again;
  fuzz::require(again.ParseFromString(out), "the quantized model does not parse");
  lite::QuantizeReport second;
  std::string twice;
  try {
    twice = lite::quantize_onnx_bytes(std::span<const uint8_t>((const uint8_t*)out.data(), out.size()), "fuzz", second);
  } catch (const Error&) {
    return 0;  // a model the first pass passed through unread (another node's bad data) may still fail
  }
  fuzz::require(second.quantized == 0, "quantizing a quantized model rewrote a node again");
  return 0;
}
