// Quantized weight formats: the GGUF/ggml block layouts and reference (de)quantisation.
//
// NOTE [Quantized kernels] in docs/design.md. A quantized row of k values is k / block_size
// blocks stored back to back, each block_bytes long, exactly as a GGUF file holds them, so a
// mapped file's tensor data is used in place. All scales are little-endian IEEE float16.
//   q8_0: 32 values, 34 bytes:  f16 d, int8 q[32];                     x = d * q
//   q4_0: 32 values, 18 bytes:  f16 d, u8 qs[16];   q = nibble - 8;      x = d * q
//         (element j < 16 is the low nibble of qs[j], element j + 16 its high nibble)
//   q4_1: 32 values, 20 bytes:  f16 d, f16 m, u8 qs[16];                x = d * nibble + m
//   q4_k: 256 values, 144 bytes: f16 d, f16 dmin, u8 scales[12], u8 qs[128];
//         8 sub-blocks of 32 with 6-bit scale sc and min mn: x = d * sc * nibble - dmin * mn.
//         Sub-block pairs (2i, 2i + 1) share 32 bytes of qs: low nibbles, then high nibbles.
//   q5_k: 256 values, 176 bytes: f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128];
//         as q4_k with a fifth bit: bit (2i) of qh[l] for sub-block 2i, bit (2i + 1) for 2i + 1.
//   q6_k: 256 values, 210 bytes: u8 ql[128], u8 qh[64], int8 scales[16], f16 d;
//         16 sub-blocks of 16, x = d * scale * (6-bit value - 32).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace spore {

enum class QuantType : uint8_t { kQ8_0, kQ4_0, kQ4_1, kQ4_K, kQ5_K, kQ6_K, kF16, kBF16 };

struct QuantFormat {
  QuantType type;
  const char* name;   // "q8_0", ... as the matmul_q attribute and the CLI spell it
  int block_size;     // values per block
  int block_bytes;    // bytes per block
};

const QuantFormat& quant_format(QuantType type);
std::optional<QuantType> parse_quant_type(std::string_view name);  // nullopt when unknown
// Bytes of one row of k values; throws kShape when k is not a multiple of the block size.
size_t quant_row_bytes(QuantType type, int64_t k);

// Reference conversions of one row (k = out.size() or in.size() values). Throw kShape when the
// byte count does not match k, kUnsupported for quantize_row of q5_k / q6_k (read-only here).
void dequantize_row(QuantType type, std::span<const uint8_t> bytes, std::span<float> out);
void quantize_row(QuantType type, std::span<const float> in, std::span<uint8_t> bytes);

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

}  // namespace spore
