// The 8-row layout of matmul_q weights (NOTE [Repacked weights]): GGUF rows of q4_0 / iq4_nl /
// q5_0 / q8_0 blocks (iq4_nl's block is q4_0's: a float16 scale and 16 nibble bytes) rewritten group by group so that the packed kernels of the CPU level
// load one 32-byte unit for 8 output columns. A pure byte permutation: same size, exact inverse.
#include <atomic>
#include <cstring>

#include "spore/error.h"
#include "spore/llm.h"
#include "spore/quant.h"

namespace spore {

namespace {

// Quant bytes (after the float16 scale and, q5_0, the 4 bytes of fifth bits) of a block.
int64_t quant_bytes(GgmlType t) { return t == GgmlType::kQ8_0 ? 32 : 16; }

// Moves the GGUF block of row c (rowb) to or from its place in packed block pb: the scale
// (2 bytes) at 2 c, quant bytes 4u..4u+3 at 16 + 32 u + 4 c; q5_0's fifth bits of elements
// 4u + i and 16 + 4u + i to bit 4c + i of the masks at 144 + 8u and 148 + 8u.
void move_block(GgmlType t, uint8_t* pb, uint8_t* rowb, int64_t c, bool to_packed) {
  const int64_t qb = quant_bytes(t), qs = t == GgmlType::kQ5_0 ? 6 : 2;
  if (to_packed) std::memcpy(pb + 2 * c, rowb, 2);
  else std::memcpy(rowb, pb + 2 * c, 2);
  for (int64_t u = 0; u < qb / 4; ++u) {
    if (to_packed) std::memcpy(pb + 16 + 32 * u + 4 * c, rowb + qs + 4 * u, 4);
    else std::memcpy(rowb + qs + 4 * u, pb + 16 + 32 * u + 4 * c, 4);
  }
  if (t != GgmlType::kQ5_0) return;
  uint8_t* qh = rowb + 2;  // bit e: element e
  uint8_t* masks = pb + 16 + 128;
  if (to_packed && c == 0) std::memset(masks, 0, 32);  // the rows' bits are ORed in, row 0 first
  for (int64_t u = 0; u < 4; ++u)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 4; ++i) {
        const int64_t e = 16 * h + 4 * u + i, bit = 4 * c + i;
        uint8_t& m = masks[8 * u + 4 * h + bit / 8];
        if (to_packed) m = (uint8_t)(m | (((qh[e / 8] >> (e % 8)) & 1) << (bit % 8)));
        else qh[e / 8] = (uint8_t)((qh[e / 8] & ~(1 << (e % 8))) | (((m >> (bit % 8)) & 1) << (e % 8)));
      }
}

// Moves each group between the layouts: to_packed, GGUF rows -> 8-row groups; else back.
Tensor permute_groups(const Tensor& w, GgmlType type, bool to_packed) {
  const char* what = to_packed ? "repack_quant_rows" : "unpack_quant_rows";
  if (w.dtype() != DType::kUInt8 || w.ndim() != 2)
    throw Error(ErrorCode::kDType, std::string(what) + ": the weight must be uint8 blocks, 2-D");
  const int64_t rows = to_packed ? w.shape()[0] : 8 * w.shape()[0];
  if (!quant_repackable(type, rows))
    throw Error(ErrorCode::kValue, std::string(what) + ": takes q4_0, iq4_nl, q5_0 or q8_0 weights with a multiple of 8 rows, got " +
                                       quant_traits(type).key + " with " + std::to_string(rows) + " rows");
  const int64_t bb = quant_traits(type).block_bytes;
  const int64_t rb = to_packed ? w.shape()[1] : w.shape()[1] / 8;
  if (rb % bb != 0 || (!to_packed && w.shape()[1] % 8 != 0))
    throw Error(ErrorCode::kShape, std::string(what) + ": a row of " + std::to_string(w.shape()[1]) + " bytes is not whole " +
                                       quant_traits(type).key + " blocks of " + std::to_string(bb) +
                                       (to_packed ? "" : " for each of a group's 8 rows"));
  const Tensor src = w.contiguous();
  Tensor out = Tensor::empty(to_packed ? Shape{rows / 8, 8 * rb} : Shape{rows, rb}, DType::kUInt8, Device::cpu());
  const uint8_t* in = src.data<uint8_t>();
  uint8_t* o = out.data<uint8_t>();
  const int64_t nb = rb / bb, groups = rows / 8;
  // Serial: once per weight at load, a memory-speed copy (the ops layer has no thread pool).
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t b = 0; b < nb; ++b) {
      uint8_t* pb = (to_packed ? o : const_cast<uint8_t*>(in)) + g * 8 * rb + b * 8 * bb;
      for (int64_t c = 0; c < 8; ++c)
        move_block(type, pb, (to_packed ? const_cast<uint8_t*>(in) : o) + (g * 8 + c) * rb + b * bb, c, to_packed);
    }
  return out;
}

}  // namespace

bool quant_repackable(GgmlType type, int64_t rows) {
  return (type == GgmlType::kQ4_0 || type == GgmlType::kIQ4_NL || type == GgmlType::kQ5_0 || type == GgmlType::kQ8_0) &&
         rows > 0 && rows % 8 == 0;
}

Tensor repack_quant_rows(const Tensor& w, GgmlType type) { return permute_groups(w, type, true); }

Tensor unpack_quant_rows(const Tensor& w, GgmlType type) { return permute_groups(w, type, false); }

void unpack_quant_row(GgmlType type, const uint8_t* packed, int64_t row_bytes, int64_t row, uint8_t* out) {
  const int64_t bb = quant_traits(type).block_bytes, g = row / 8;
  for (int64_t b = 0; b < row_bytes / bb; ++b)
    move_block(type, const_cast<uint8_t*>(packed) + g * 8 * row_bytes + b * 8 * bb, out + b * bb, row % 8, false);
}

namespace {
std::atomic<bool> g_repack{true};
}  // namespace

void set_repack_at_load(bool on) { g_repack = on; }

bool repack_at_load() { return g_repack; }

}  // namespace spore
