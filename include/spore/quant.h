// Quantization types: one table, one row per ggml tensor type (NOTE [Quantization types] and
// NOTE [Quantized kernels] in docs/design.md). The GGUF reader and writer, matmul_q, the LLM
// loader, `spore convert` and the memory report all read the row: names, block geometry, the
// block dequantiser and quantiser, and how the engine feeds activations to the type's kernel.
// A quantized row of k values is k / block_size blocks stored back to back, each block_bytes
// long, exactly as a GGUF file holds them, so a mapped file's tensor data is used in place.
// Block layouts (all scales little-endian IEEE float16 unless said; "nibble" = 4 bits, element
// j < 16 of a 32-group is the low nibble of qs[j], element j + 16 its high nibble):
//   q4_0  32 / 18:  f16 d, qs[16];                    x = d * (nibble - 8)
//   q4_1  32 / 20:  f16 d, f16 m, qs[16];              x = d * nibble + m
//   q5_0  32 / 22:  f16 d, u32 qh, qs[16];             x = d * (nibble | bit j of qh << 4) - 16 d
//   q5_1  32 / 24:  f16 d, f16 m, u32 qh, qs[16];      x = d * (nibble | bit << 4) + m
//   q8_0  32 / 34:  f16 d, int8 q[32];                 x = d * q
//   q2_k 256 / 84:  u8 scales[16], qs[64], f16 d, f16 dmin; 16 sub-blocks of 16, scale byte =
//                   4-bit scale | 4-bit min << 4: x = d * sc * q2 - dmin * mn
//   q3_k 256 / 110: hmask[32], qs[64], scales[12] (16 six-bit scales), f16 d;
//                   x = d * (sc - 32) * (q2 | hbit << 2 - 4)
//   q4_k 256 / 144: f16 d, f16 dmin, scales[12], qs[128]; 8 sub-blocks of 32 with 6-bit scale sc
//                   and min mn: x = d * sc * nibble - dmin * mn; pairs (2i, 2i + 1) share 32
//                   bytes of qs: low nibbles, then high nibbles.
//   q5_k 256 / 176: f16 d, f16 dmin, scales[12], qh[32], qs[128]; q4_k with a fifth bit (bit
//                   j of qh[l] for sub-block j).
//   q6_k 256 / 210: ql[128], qh[64], int8 scales[16], f16 d; 16 sub-blocks of 16,
//                   x = d * scale * (6-bit value - 32).
//   q8_k 256 / 292: f32 d, int8 q[256], int16 bsums[16]; x = d * q (ggml's activation blocks).
//   iq4_nl 32 / 18: f16 d, qs[16]; x = d * kIq4nlValues[nibble].
//   iq4_xs 256 / 136: f16 d, u16 scales_h, scales_l[4], qs[128]; 8 sub-blocks of 32, 6-bit
//                   scale ls (low 4 bits in scales_l, high 2 in scales_h): x = d * (ls - 32) *
//                   kIq4nlValues[nibble].
//   tq2_0 256 / 66: qs[64], f16 d; 2-bit q: x = d * (q - 1).
//   tq1_0 256 / 54: qs[48], qh[4], f16 d; five (four in qh) base-3 digits per byte, x = d * (t - 1).
//   mxfp4 32 / 17:  u8 e (E8M0), qs[16]; x = 2^(e - 128) * kMxfp4Values[nibble] (doubled e2m1).
//   nvfp4 64 / 36:  u8 d[4] (UE4M3, one per 16 values), qs[32]; sub-block s of 16: element j < 8
//                   the low nibble of qs[8 s + j], j + 8 its high nibble; x = nvfp4_scale(d[s]) *
//                   kMxfp4Values[nibble].
//   q1_0 128 / 18:  f16 d, qs[16]; element j is bit j % 8 of qs[j / 8]: x = bit ? d : -d.
//   q2_0  64 / 18:  f16 d, qs[16]; element j is bits 2 (j % 4) of qs[j / 4]: x = d * (q - 1).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "spore/dtype.h"

namespace spore {

// ggml tensor element types, numbered as ggml.h (and so as GGUF files hold them).
enum class GgmlType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kIQ2_XXS = 16,
  kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21, kIQ2_S = 22, kIQ4_XS = 23,
  kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28, kIQ1_M = 29, kBF16 = 30, kTQ1_0 = 34,
  kTQ2_0 = 35, kMXFP4 = 39, kNVFP4 = 40, kQ1_0 = 41, kQ2_0 = 42,
};
inline constexpr int kNumGgmlTypes = 43;  // ids are below this

// How matmul_q feeds activations to a type's kernel (NOTE [Quantized kernels]).
enum class QuantActivations : uint8_t {
  kNone,      // no matmul_q kernel: the loader dequantises such a weight to float32 once
  kFloat,     // f16 / bf16: float32 activations (ggml numerics: rounded to the weight's type)
  kQ8Groups,  // quantised once per row to q8 blocks of 32 (d = amax / 127) with half sums
};

struct QuantTraits {
  GgmlType type;
  const char* name;      // as ggml and GGUF spell it: "Q4_K"
  const char* key;       // as matmul_q, the CLI and messages spell it: "q4_k"
  uint32_t block_size;   // values per block (1 for plain types)
  uint32_t block_bytes;  // bytes per block
  DType dtype;           // plain types: their element dtype; block types: kUInt8 (raw blocks)
  // One block to float32 (nullptr for integer types). Total: every bit pattern reads as some
  // value (grid and table indices are as wide as their tables), so a hostile block can give NaN
  // or infinity but never an out-of-bounds read.
  void (*dequantize)(const uint8_t* block, float* out);
  void (*quantize)(const float* in, uint8_t* block);  // nullptr: read only
  QuantActivations activations;
  // ggml's activation type for this weight (vec_dot_type), for NOTE [LLM numerics]: which
  // products Spore rounds as ggml does (q8_0, q8_1, f16, bf16) and which it does not (q8_k).
  GgmlType ggml_activations;
  bool quantized() const { return dtype == DType::kUInt8 && block_size > 1; }
};

// The row of a type id, nullptr when the id is not a ggml type this table knows.
const QuantTraits* find_quant_traits(uint32_t id);
// The row of a type; kFormat naming the number when unknown.
const QuantTraits& quant_traits(GgmlType type);
std::span<const QuantTraits> all_quant_types();
// By key or name ("q4_k", "Q4_K"); nullopt when unknown.
std::optional<GgmlType> parse_quant_type(std::string_view name);
// The keys of the types matmul_q takes, for messages ("f16, bf16, q4_0, ...").
std::string matmul_q_type_list();
// Bytes of one row of k values; throws kShape when k is not a multiple of the block size.
size_t quant_row_bytes(GgmlType type, int64_t k);

// Reference conversions of one row (k = out.size() or in.size() values). Throw kShape when the
// byte count does not match k, kUnsupported when the type has no dequantiser / quantiser.
void dequantize_row(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out);
void quantize_row(GgmlType type, std::span<const float> in, std::span<uint8_t> bytes);

// The 6-bit scale and min of sub-block j (0..7) of a q4_k / q5_k block's 12 scale bytes.
inline void kquant_scale_min(const uint8_t* s, int j, int& scale, int& min) {
  if (j < 4) {
    scale = s[j] & 63;
    min = s[j + 4] & 63;
  } else {
    scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
// All eight at once (the kernels' form, the same values): scales and mins 0-3 are the low 6 bits
// of bytes 0-3 and 4-7; 4-7 take their low 4 bits from bytes 8-11 (low and high nibble) and their
// top 2 bits from the top bits of bytes 0-3 and 4-7, four bytes per 32-bit word.
inline void kquant_scales_mins8(const uint8_t* s, uint8_t* scales, uint8_t* mins) {
  uint32_t lo, mid, hi;
  std::memcpy(&lo, s, 4), std::memcpy(&mid, s + 4, 4), std::memcpy(&hi, s + 8, 4);
  const uint32_t sc_lo = lo & 0x3f3f3f3fu, mn_lo = mid & 0x3f3f3f3fu;
  const uint32_t sc_hi = (hi & 0x0f0f0f0fu) | (((lo >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((hi >> 4) & 0x0f0f0f0fu) | (((mid >> 6) & 0x03030303u) << 4);
  std::memcpy(scales, &sc_lo, 4), std::memcpy(scales + 4, &sc_hi, 4);
  std::memcpy(mins, &mn_lo, 4), std::memcpy(mins + 4, &mn_hi, 4);
}
// The 6-bit scale i (0..15) of a q3_k block's 12 scale bytes (before the -32).
inline int q3k_scale(const uint8_t* s, int i) {
  const int low = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
  return low | (((s[8 + i % 4] >> (2 * (i / 4))) & 3) << 4);
}
// The 6-bit scale of sub-block j (0..7) of an iq4_xs block (before the -32).
inline int iq4xs_scale(const uint8_t* b, int j) {
  const int low = (b[4 + j / 2] >> (4 * (j % 2))) & 0xF;
  const int high = ((b[2] | b[3] << 8) >> (2 * j)) & 3;
  return low | (high << 4);
}
// The 16 values a 4-bit index selects: iq4_nl / iq4_xs's non-linear levels and mxfp4's e2m1
// values doubled (ggml's tables; the scale of mxfp4 is halved to match).
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
// Digit e (0..255) of a tq1_0 block, 0..2 (the value is d * (digit - 1)): elements 0..159 are
// the five base-3 digits of qs[0..31] (digit n of byte m is element 32 n + m), 160..239 those of
// qs[32..47] (16 n + m), 240..255 four digits of qh[0..3] (4 n + m). A digit is read as ggml
// does: the byte times 3^n kept to 8 bits, times 3, shifted right by 8.
inline int tq1_digit(const uint8_t* b, int e) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  int byte, n;
  if (e < 160) byte = e % 32, n = e / 32;
  else if (e < 240) byte = 32 + (e - 160) % 16, n = (e - 160) / 16;
  else byte = 48 + (e - 240) % 4, n = (e - 240) / 4;
  const uint8_t q = (uint8_t)(b[byte] * kPow3[n]);
  return (q * 3) >> 8;
}
// mxfp4's E8M0 scale, halved (2^(e - 128)), as a float32 (e < 2 gives a subnormal).
float mxfp4_scale(uint8_t e);
// nvfp4's UE4M3 scale, halved as mxfp4's (ggml's table values are doubled e2m1): 4 exponent bits
// (bias 7, subnormal below 1), 3 mantissa bits, bit 7 ignored; 0 and 0x7F (NaN) read as 0.
float nvfp4_scale(uint8_t e);

}  // namespace spore
