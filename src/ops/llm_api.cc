// Public API of the LLM block and quantized-product ops (include/spore/llm.h).
#include "spore/error.h"
#include "spore/llm.h"
#include "spore/op_registry.h"

namespace spore {

Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps, bool ggml) {
  return dispatch1(OpId::k_rms_norm, {x, weight}, Attrs::of(eps, ggml));
}

Tensor rope(const Tensor& x, const Tensor& positions, const Tensor& inv_freq, const RopeOptions& o) {
  return dispatch1(OpId::k_rope, {x, positions, inv_freq}, Attrs::of(o.seq_axis, o.interleaved, o.scale, o.inverse, o.ggml_theta_scale));
}

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, double scale, int64_t past, bool ggml,
                 int64_t window, double softcap, bool rows_as_decode) {
  return dispatch1(OpId::k_attention, {q, k, v}, Attrs::of(scale, past, ggml, window, softcap, rows_as_decode));
}

void kv_cache_write(const Tensor& cache, const Tensor& new_kv, int64_t position) {
  const Tensor in[] = {cache, new_kv};
  dispatch(OpId::k_kv_cache_write, in, Attrs::of(position));
}

Tensor matmul_q(const Tensor& x, const Tensor& w, GgmlType type, bool ggml, QuantLayout layout) {
  return dispatch1(OpId::k_matmul_q, {x, w}, Attrs::of((int64_t)type, ggml, (int64_t)layout));
}

Tensor matmul_q(const Tensor& x, const Tensor& w, std::string_view type, bool ggml) {
  const std::optional<GgmlType> t = parse_quant_type(type);
  if (!t)
    throw Error(ErrorCode::kValue, "matmul_q: unknown weight type '" + std::string(type) + "' (expected one of " +
                                       matmul_q_type_list() + ")");
  return matmul_q(x, w, *t, ggml);
}

}  // namespace spore
