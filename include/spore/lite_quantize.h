// `spore lite quantize`: post-training dynamic int8 quantization of an ONNX model's MatMul and Gemm
// weights (NOTE [Dynamic int8 products] in docs/design.md), as ONNX Runtime's quantize_dynamic
// offers. The output is ONNX: each product with a constant weight becomes ONNX Runtime's
// com.microsoft DynamicQuantizeMatMul over an int8 weight with one scale per output column (its
// activations are quantized per tensor at run time), which Spore Lite and ONNX Runtime both run.
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace spore::lite {

struct QuantizeOptions {
  // Weights with fewer elements stay float32 (a tiny product gains nothing from int8).
  int64_t min_elements = 0;
};

struct SkippedNode {
  std::string node, op, why;  // the node's name (its index when it has none), op type, reason
};

struct QuantizeReport {
  int quantized = 0;                 // MatMul and Gemm nodes rewritten
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
