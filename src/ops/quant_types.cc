// The one table of quantization types (include/spore/quant.h, NOTE [Quantization types]): a row
// per ggml type, read by the GGUF reader and writer, matmul_q's inference and kernels, the LLM
// loader, `spore convert` and the memory report. The CPU backend fills its kernels per SIMD level
// for the rows whose activations are not kNone (the CPU backend's quant_kernels.inc), and
// tests/ops/quant_types_test.cc holds the two to each other.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "ops/quant_blocks.h"
#include "spore/error.h"
#include "spore/quant.h"

namespace spore {

namespace {

using namespace quant;
using G = GgmlType;
using A = QuantActivations;
constexpr DType kU8 = DType::kUInt8;

constexpr QuantTraits kRows[] = {
    // plain types
    {G::kF32, "F32", "f32", 1, 4, DType::kFloat32, dequantize_f32, quantize_f32, A::kNone, G::kF32},
    {G::kF16, "F16", "f16", 1, 2, DType::kFloat16, dequantize_f16, quantize_f16, A::kFloat, G::kF16},
    {G::kBF16, "BF16", "bf16", 1, 2, DType::kBFloat16, dequantize_bf16, quantize_bf16, A::kFloat, G::kBF16},
    {G::kF64, "F64", "f64", 1, 8, DType::kFloat64, dequantize_f64, nullptr, A::kNone, G::kF64},
    {G::kI8, "I8", "i8", 1, 1, DType::kInt8, nullptr, nullptr, A::kNone, G::kI8},
    {G::kI16, "I16", "i16", 1, 2, DType::kUInt8, nullptr, nullptr, A::kNone, G::kI16},
    {G::kI32, "I32", "i32", 1, 4, DType::kInt32, nullptr, nullptr, A::kNone, G::kI32},
    {G::kI64, "I64", "i64", 1, 8, DType::kInt64, nullptr, nullptr, A::kNone, G::kI64},
    // blocks of 32
    {G::kQ4_0, "Q4_0", "q4_0", 32, 18, kU8, dequantize_q4_0, quantize_q4_0, A::kQ8Groups, G::kQ8_0},
    {G::kQ4_1, "Q4_1", "q4_1", 32, 20, kU8, dequantize_q4_1, quantize_q4_1, A::kQ8Groups, G::kQ8_1},
    {G::kQ5_0, "Q5_0", "q5_0", 32, 22, kU8, dequantize_q5_0, quantize_q5_0, A::kQ8Groups, G::kQ8_0},
    {G::kQ5_1, "Q5_1", "q5_1", 32, 24, kU8, dequantize_q5_1, nullptr, A::kQ8Groups, G::kQ8_1},
    {G::kQ8_0, "Q8_0", "q8_0", 32, 34, kU8, dequantize_q8_0, quantize_q8_0, A::kQ8Groups, G::kQ8_0},
    {G::kQ8_1, "Q8_1", "q8_1", 32, 36, kU8, dequantize_q8_1, nullptr, A::kNone, G::kQ8_1},
    {G::kIQ4_NL, "IQ4_NL", "iq4_nl", 32, 18, kU8, dequantize_iq4_nl, nullptr, A::kQ8Groups, G::kQ8_0},
    {G::kMXFP4, "MXFP4", "mxfp4", 32, 17, kU8, dequantize_mxfp4, nullptr, A::kQ8Groups, G::kQ8_0},
    // blocks of 64 and 128 (groups of 32 for the kernels)
    {G::kNVFP4, "NVFP4", "nvfp4", 64, 36, kU8, dequantize_nvfp4, nullptr, A::kQ8Groups, G::kQ8_0},
    {G::kQ2_0, "Q2_0", "q2_0", 64, 18, kU8, dequantize_q2_0, nullptr, A::kQ8Groups, G::kQ8_0},
    {G::kQ1_0, "Q1_0", "q1_0", 128, 18, kU8, dequantize_q1_0, nullptr, A::kQ8Groups, G::kQ8_0},
    // blocks of 256
    {G::kQ2_K, "Q2_K", "q2_k", 256, 84, kU8, dequantize_q2_k, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kQ3_K, "Q3_K", "q3_k", 256, 110, kU8, dequantize_q3_k, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kQ4_K, "Q4_K", "q4_k", 256, 144, kU8, dequantize_q4_k, quantize_q4_k, A::kQ8Groups, G::kQ8_K},
    {G::kQ5_K, "Q5_K", "q5_k", 256, 176, kU8, dequantize_q5_k, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kQ6_K, "Q6_K", "q6_k", 256, 210, kU8, dequantize_q6_k, quantize_q6_k, A::kQ8Groups, G::kQ8_K},
    {G::kQ8_K, "Q8_K", "q8_k", 256, 292, kU8, dequantize_q8_k, nullptr, A::kNone, G::kQ8_K},
    {G::kIQ4_XS, "IQ4_XS", "iq4_xs", 256, 136, kU8, dequantize_iq4_xs, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kTQ1_0, "TQ1_0", "tq1_0", 256, 54, kU8, dequantize_tq1_0, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kTQ2_0, "TQ2_0", "tq2_0", 256, 66, kU8, dequantize_tq2_0, nullptr, A::kQ8Groups, G::kQ8_K},
    // grid types (the i-quants), read through ops/quant_grids.h
    {G::kIQ2_XXS, "IQ2_XXS", "iq2_xxs", 256, 66, kU8, dequantize_iq2_xxs, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ2_XS, "IQ2_XS", "iq2_xs", 256, 74, kU8, dequantize_iq2_xs, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ2_S, "IQ2_S", "iq2_s", 256, 82, kU8, dequantize_iq2_s, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ3_XXS, "IQ3_XXS", "iq3_xxs", 256, 98, kU8, dequantize_iq3_xxs, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ3_S, "IQ3_S", "iq3_s", 256, 110, kU8, dequantize_iq3_s, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ1_S, "IQ1_S", "iq1_s", 256, 50, kU8, dequantize_iq1_s, nullptr, A::kQ8Groups, G::kQ8_K},
    {G::kIQ1_M, "IQ1_M", "iq1_m", 256, 56, kU8, dequantize_iq1_m, nullptr, A::kQ8Groups, G::kQ8_K},
};

// Row index by type id (-1: not a type), built once.
const std::array<int8_t, kNumGgmlTypes>& row_index() {
  static const auto index = [] {
    std::array<int8_t, kNumGgmlTypes> ix;
    ix.fill(-1);
    for (size_t r = 0; r < std::size(kRows); ++r) ix[(size_t)kRows[r].type] = (int8_t)r;
    return ix;
  }();
  return index;
}

bool same_ignoring_case(std::string_view a, const char* b) {
  size_t i = 0;
  for (; i < a.size() && b[i]; ++i)
    if (std::tolower((unsigned char)a[i]) != std::tolower((unsigned char)b[i])) return false;
  return i == a.size() && !b[i];
}

void check_bytes(const QuantTraits& t, int64_t k, size_t got, const char* what) {
  const size_t want = quant_row_bytes(t.type, k);
  if (got != want)
    throw Error(ErrorCode::kShape, std::string(what) + ": a " + t.key + " row of " + std::to_string(k) + " values is " +
                                       std::to_string(want) + " bytes, got " + std::to_string(got));
}

}  // namespace

const QuantTraits* find_quant_traits(uint32_t id) {
  if (id >= (uint32_t)kNumGgmlTypes) return nullptr;
  const int r = row_index()[id];
  return r < 0 ? nullptr : &kRows[r];
}

const QuantTraits& quant_traits(GgmlType type) {
  const QuantTraits* t = find_quant_traits((uint32_t)type);
  if (!t) throw Error(ErrorCode::kFormat, "unknown ggml tensor type " + std::to_string((uint32_t)type));
  return *t;
}

std::span<const QuantTraits> all_quant_types() { return kRows; }

std::optional<GgmlType> parse_quant_type(std::string_view name) {
  for (const QuantTraits& t : kRows)
    if (same_ignoring_case(name, t.key)) return t.type;
  return std::nullopt;
}

std::string matmul_q_type_list() {
  std::string s;
  for (const QuantTraits& t : kRows)
    if (t.activations != QuantActivations::kNone) s += (s.empty() ? "" : ", ") + std::string(t.key);
  return s;
}

size_t quant_row_bytes(GgmlType type, int64_t k) {
  const QuantTraits& t = quant_traits(type);
  if (k < 0 || k % t.block_size != 0)
    throw Error(ErrorCode::kShape, std::string(t.key) + " rows hold a multiple of " + std::to_string(t.block_size) +
                                       " values, got " + std::to_string(k) + " (pad the row or use another type)");
  return (size_t)(k / t.block_size) * (size_t)t.block_bytes;
}

void dequantize_row(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out) {
  const QuantTraits& t = quant_traits(type);
  check_bytes(t, (int64_t)out.size(), bytes.size(), "dequantize_row");
  if (!t.dequantize)
    throw Error(ErrorCode::kUnsupported, std::string("dequantize_row: reading ") + t.name + " is not implemented");
  const size_t nb = out.size() / t.block_size;
  for (size_t i = 0; i < nb; ++i) t.dequantize(bytes.data() + i * t.block_bytes, out.data() + i * t.block_size);
}

void quantize_row(GgmlType type, std::span<const float> in, std::span<uint8_t> bytes) {
  const QuantTraits& t = quant_traits(type);
  check_bytes(t, (int64_t)in.size(), bytes.size(), "quantize_row");
  if (!t.quantize) {
    std::string can;
    for (const QuantTraits& r : kRows)
      if (r.quantize) can += (can.empty() ? "" : ", ") + std::string(r.key);
    throw Error(ErrorCode::kUnsupported,
                std::string("quantize_row: writing ") + t.key + " is not implemented (" + can + " are)");
  }
  const size_t nb = in.size() / t.block_size;
  for (size_t i = 0; i < nb; ++i) t.quantize(in.data() + i * t.block_size, bytes.data() + i * t.block_bytes);
}

}  // namespace spore
