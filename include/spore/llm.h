// Public API of the LLM block ops (NOTE [LLM blocks] in docs/design.md) and the quantized
// matrix product (NOTE [Quantized kernels]). Each is one registry op.
#pragma once
#include <string>

#include "spore/quant.h"
#include "spore/tensor.h"

namespace spore {

// Every op below takes a `ggml` switch (NOTE [LLM numerics] in docs/design.md): false (the
// default) computes as a float32 reference does (Hugging Face transformers); true rounds where
// llama.cpp's CPU backend (ggml) rounds, so that a GGUF model's greedy tokens match llama.cpp's.

// x * rsqrt(mean(x^2 over the last axis) + eps) * weight; weight has x's last extent.
// ggml: the sum of squares in float64 (of float32 products), as ggml's rms_norm.
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, bool ggml = false);

struct RopeOptions {
  int64_t seq_axis = -2;     // axis of x that positions index ([B, H, S, D]: -2; [B, S, H, D]: -3)
  bool interleaved = false;  // pairs (2i, 2i+1) (GPT-J, GGUF llama); else (i, i + rot/2) (NeoX, HF)
  double scale = 1.0;        // multiplies cos and sin (LongRoPE / YaRN attention factor)
  bool inverse = false;      // rotate by -angle (the backward rule)
  // > 0: the angle of frequency i is theta_i * inv_freq[i], theta_0 = position and theta_{i+1} =
  // theta_i * ggml_theta_scale in float32 (ggml's rope cache: theta_scale = base^(-2/dims)), so
  // inv_freq then holds only the per-frequency factors (1, or 1 / llama3's divisors).
  double ggml_theta_scale = 0;
};
// Rotary embedding of the first 2 * inv_freq.numel() features of the last axis (the rest pass
// through): angle = positions[s] * inv_freq[i] in float32, as Hugging Face computes it.
// positions: int64 [S]; inv_freq: float32 [rot / 2], computed by the model code (theta, linear,
// llama3 and LongRoPE scaling all only change this table).
Tensor rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, const RopeOptions& options = {});

// Causal scaled-dot-product attention. q [B, Hq, S, D]; k [B, Hkv, T, D]; v [B, Hkv, T, Dv], with
// Hkv dividing Hq (grouped-query heads). Query i sits at position past + i and sees keys
// 0..past + i, so k and v may be a whole KV cache (T >= past + S; later rows are never read).
// k and v may be float16/bfloat16 (a cache) under a float32 q. scale <= 0 means 1 / sqrt(D).
// Result: [B, Hq, S, Dv] in q's dtype.
// ggml: the non-flash path of llama.cpp: all scores of a row, then softmax (sum in float64),
// with q rounded to k's dtype and the probabilities to v's when those are float16 / bfloat16.
// window > 0: a sliding window, query i sees keys (past + i - window, past + i] (Mistral);
// softcap > 0: each scaled score s becomes softcap * tanh(s / softcap) (Gemma 2). Neither with ggml.
// rows_as_decode (ggml only): every query row in the order a one-token call computes it, not
// llama.cpp's multi-token order, so that a row's bits do not depend on the rows beside it
// (speculative verification, NOTE [Exact speculation]).
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale = 0, int64_t past = 0,
                 bool ggml = false, int64_t window = 0, double softcap = 0, bool rows_as_decode = false);

// Writes new_kv [B, H, S, D] into cache [B, H, T, D] at rows position..position + S - 1, in place.
// The cache is float16, bfloat16 or float32 (float64 for float64 new_kv).
void kv_cache_write(const Tensor& cache, const Tensor& new_kv, int64_t position);

// How a matmul_q weight's rows are laid out (NOTE [Repacked weights]): kRows as the GGUF file
// holds them, [n, row_bytes]; kRows8: groups of 8 rows interleaved block by block for the
// row-tiled GEMM (q4_0, iq4_nl, q5_0, q8_0), one group a tensor row: [n / 8, 8 * row_bytes]. The op's
// optional third attribute.
enum class QuantLayout : int64_t { kRows = 0, kRows8 = 1 };

// x float32 [m, k] times a weight [n, k] held as GGUF blocks: a uint8 [n, row_bytes] tensor and
// its type (a row of include/spore/quant.h whose activations are not kNone: q4_0 q4_1 q5_0 q5_1
// q8_0 q2_k q3_k q4_k q5_k q6_k iq4_nl iq4_xs tq1_0 tq2_0 mxfp4), or a float16 / bfloat16 [n, k]
// tensor with type F16 / BF16. Result float32 [m, n]; a float64 x gets the exact dequantised
// product in float64 (a reference). Differentiable in x only (NOTE [LLM gradients]): dx = dy W
// with the dequantised weight; asking for the weight's gradient is a kUnsupported error (it is
// frozen). The type is the op's integer attribute (the ggml type id), so nothing parses a name
// per call.
// ggml: activations quantised as ggml's q8_0 / q8_1 blocks store them (float16 scale, q8_1's
// float16 sum) for q8_0 / q4_0 / q4_1, rounded to the weight's 16-bit type for f16 / bf16.
// layout kRows8: w was written by repack_quant_rows (NOTE [Repacked weights]).
Tensor matmul_q(const Tensor& x, const Tensor& w, GgmlType type, bool ggml = false,
                QuantLayout layout = QuantLayout::kRows);
// The same with the type's name ("q4_k"); kValue naming it when unknown.
Tensor matmul_q(const Tensor& x, const Tensor& w, std::string_view type, bool ggml = false);

// NOTE [Repacked weights]: whether a weight of `type` with `rows` rows can take layout kRows8
// (q4_0, iq4_nl, q5_0 or q8_0, rows a multiple of 8), the repacked copy of a kRows weight [n, row_bytes] (a new
// uint8 [n / 8, 8 * row_bytes]; kValue / kShape when it cannot), and the inverse.
bool quant_repackable(GgmlType type, int64_t rows);
Tensor repack_quant_rows(const Tensor& w, GgmlType type);
Tensor unpack_quant_rows(const Tensor& w, GgmlType type);
// GGUF row `row` (row_bytes of blocks) of a kRows8 weight's bytes `packed`, written to out.
void unpack_quant_row(GgmlType type, const uint8_t* packed, int64_t row_bytes, int64_t row, uint8_t* out);
// Whether GGUF loads repack (the process's default, on; `--no-repack` turns it off so every
// weight stays in the file mapping).
void set_repack_at_load(bool on);
bool repack_at_load();

}  // namespace spore
