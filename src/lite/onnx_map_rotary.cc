// ONNX's RotaryEmbedding (op set 23) written with registry ops (NOTE [ONNX attention and
// losses]): the spec's algorithm on [B, S, H, D] (4-D inputs transposed there and back, 3-D ones
// split into num_heads), the first rotary_embedding_dim channels rotated as halves or as
// interleaved pairs, the caches indexed by position_ids when given.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

std::vector<uint32_t> rotary_embedding(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t x = c.at(0);
  const Shape xs = m.shape(x);
  const int rank = xs.ndim();
  if (rank != 3 && rank != 4) c.bad("X must be 3-D or 4-D, not " + std::to_string(rank) + "-D");
  const DType t = m.dtype(x);
  if (!is_floating(t)) c.bad("X must be floating-point");
  auto permute = [&](uint32_t v) { return m.emit(c, OpId::k_permute, {v}, Attrs::of(std::vector<int64_t>{0, 2, 1, 3})); };
  if (rank == 4) {
    x = permute(x);
  } else {
    const int64_t heads = c.i("num_heads", 0);
    if (heads <= 0 || xs[2] % heads != 0) c.bad("a 3-D X needs num_heads (> 0) dividing its hidden size " + std::to_string(xs[2]));
    x = m.reshape(c, x, {xs[0], xs[1], heads, xs[2] / heads});
  }
  const Shape s = m.shape(x);  // [B, S, H, D]
  const int64_t batch = s[0], seq = s[1], heads = s[2], d = s[3];
  const int64_t rd = c.i("rotary_embedding_dim", 0) == 0 ? d : c.i("rotary_embedding_dim", 0);
  if (rd < 0 || rd > d || rd % 2) c.bad("rotary_embedding_dim " + std::to_string(rd) + " must be even and at most the head size " + std::to_string(d));
  const int64_t half = rd / 2;
  auto cache = [&](size_t k, const char* what) {
    uint32_t v = m.cast_to(c, c.at(k), t);
    if (c.given(3)) {
      const Shape& cs = m.shape(v);
      if (cs.ndim() != 2 || cs[1] != half) c.bad(std::string(what) + " must be [positions, " + std::to_string(half) + "] with position_ids");
      const Shape& ps = m.shape(c.at(3));
      if (ps.ndim() != 2 || ps[0] != batch || ps[1] != seq) c.bad("position_ids must be [batch, sequence]");
      v = m.emit(c, OpId::k_index_select, {v, m.reshape(c, m.cast_to(c, c.at(3), DType::kInt64), {-1})}, Attrs::of(int64_t{0}));
    } else {
      const Shape& cs = m.shape(v);
      if (cs.ndim() != 3 || cs[0] != batch || cs[1] != seq || cs[2] != half)
        c.bad(std::string(what) + " must be [batch, sequence, " + std::to_string(half) + "] without position_ids");
    }
    return m.reshape(c, v, {batch, seq, 1, half});
  };
  const uint32_t cos = cache(1, "cos_cache"), sin = cache(2, "sin_cache");
  auto slice = [&](uint32_t v, int64_t from, int64_t to) { return m.emit(c, OpId::k_slice, {v}, Attrs::of(int64_t{3}, from, to, int64_t{1})); };
  const bool interleaved = c.i("interleaved", 0) != 0;
  const uint32_t rot = rd == d ? x : slice(x, 0, rd);
  uint32_t x1, x2;
  if (interleaved) {
    std::vector<int64_t> even, odd;
    for (int64_t i = 0; i < half; ++i) even.push_back(2 * i), odd.push_back(2 * i + 1);
    x1 = m.take(c, rot, 3, even);
    x2 = m.take(c, rot, 3, odd);
  } else {
    x1 = slice(rot, 0, half);
    x2 = slice(rot, half, rd);
  }
  auto mul = [&](uint32_t a, uint32_t b) { return m.emit(c, OpId::k_mul, {a, b}); };
  const uint32_t real = m.emit(c, OpId::k_sub, {mul(cos, x1), mul(sin, x2)});
  const uint32_t imag = m.emit(c, OpId::k_add, {mul(sin, x1), mul(cos, x2)});
  uint32_t y;
  if (interleaved) {
    const std::vector<int64_t> pair = {batch, seq, heads, half, 1};
    y = m.reshape(c, m.emit(c, OpId::k_concat, {m.reshape(c, real, pair), m.reshape(c, imag, pair)}, Attrs::of(int64_t{4})), {batch, seq, heads, rd});
  } else {
    y = m.emit(c, OpId::k_concat, {real, imag}, Attrs::of(int64_t{3}));
  }
  if (rd < d) y = m.emit(c, OpId::k_concat, {y, slice(x, rd, d)}, Attrs::of(int64_t{3}));
  return {rank == 4 ? permute(y) : m.reshape(c, y, std::vector<int64_t>(xs.begin(), xs.end()))};
}

}  // namespace

void add_rotary_ops(HandlerTable& t) { t["RotaryEmbedding"] = rotary_embedding; }

}  // namespace spore::onnx::detail
