// `spore lite quantize`: post-training int8 quantization of an ONNX model's MatMul, Gemm and Conv
// weights (NOTE [Dynamic int8 products] in docs/design.md), as ONNX Runtime's quantize_dynamic and
// its QDQ writer offer. Every weight gets one scale per output channel. The output is ONNX, which
// Spore Lite and ONNX Runtime both run:
// * dynamic (the default): a product becomes com.microsoft DynamicQuantizeMatMul and a convolution
//   DynamicQuantizeLinear + ConvInteger + Cast + Mul (+ Add for its bias): activations quantized
//   per tensor at run time, integer sums;
// * qdq: each node keeps its op and reads DequantizeLinear(int8 weight, scales, axis): the file's
//   weights are int8 (a quarter of the size), the arithmetic stays float32 (ONNX's QDQ form for
//   weights; op set 13 or later).
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace spore::lite {

enum class QuantizeFormat { kDynamic, kQdq };

struct QuantizeOptions {
  // Weights with fewer elements stay float32 (a tiny product gains nothing from int8).
  int64_t min_elements = 0;
  QuantizeFormat format = QuantizeFormat::kDynamic;
  bool convolutions = true;  // false: Conv nodes stay float32
};

struct SkippedNode {
  std::string node, op, why;  // the node's name (its index when it has none), op type, reason
};

struct QuantizeReport {
  int quantized = 0;                 // MatMul, Gemm and Conv nodes rewritten
  int convolutions = 0;              // of which Conv
  std::vector<SkippedNode> skipped;  // one per product left in float32
  int64_t weight_bytes_before = 0;   // the float32 weights replaced
  int64_t weight_bytes_after = 0;    // their int8 weights and scales
  int64_t file_bytes_before = 0, file_bytes_after = 0;
};

// Reads `in` (ONNX), rewrites it and writes `out` atomically. Errors: kIO (unreadable file),
// kFormat (not ONNX), kValue (`out` is `in`, a weight with a NaN or an infinity), kUnsupported
// (weights kept as external data). A model without a product to quantize is written unchanged
// but for the version note, and says so in the report.
QuantizeReport quantize_onnx(const std::filesystem::path& in, const std::filesystem::path& out,
                             const QuantizeOptions& options = {});
// The same on bytes: the quantized model's bytes, with `report` filled. `label` names the model in
// errors.
std::string quantize_onnx_bytes(std::span<const uint8_t> bytes, const std::string& label, QuantizeReport& report,
                                const QuantizeOptions& options = {});

}  // namespace spore::lite
