// Subnormal constants flushed to zero (NOTE [Subnormal weights]): a float32 constant holding
// values below FLT_MIN in magnitude is replaced by a copy in which they are signed zeros.
#include <cmath>

#include "graph/passes/pass_util.h"

namespace spore::graph {

namespace {

bool any_subnormal(const float* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (std::fpclassify(p[i]) == FP_SUBNORMAL) return true;
  return false;
}

}  // namespace

PassStats flush_subnormal_constants(Graph& g) {
  PassStats stats = start_stats("subnormal", g);
  const auto writers = writers_of_values(g);
  const size_t values = g.num_values();  // the copies added below are not visited again
  for (ValueId v = 0; v < values; ++v) {
    if (g.value(v).kind != ValueKind::kConstant || !writers[v].empty()) continue;
    const Tensor& t = g.value(v).tensor;
    if (!t.defined() || t.dtype() != DType::kFloat32 || !(t.device() == Device::cpu())) continue;
    const Tensor c = t.contiguous();
    if (!any_subnormal(c.data<float>(), c.numel())) continue;
    Tensor flushed = c.clone();
    float* q = flushed.data<float>();
    for (int64_t i = 0; i < flushed.numel(); ++i)
      if (std::fpclassify(q[i]) == FP_SUBNORMAL) q[i] = std::copysign(0.0f, q[i]);
    if (!t.storage()->writable()) flushed.storage()->make_read_only();  // a graph's own weight stays so
    const std::string name = g.value(v).name;
    g.replace_uses(v, g.add_constant(flushed, name));
    ++stats.constants_changed;
  }
  return finish_stats(stats, g);
}

}  // namespace spore::graph
