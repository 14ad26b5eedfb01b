// GELU substitution (NOTE [Inference passes]): 0.5 * f * (1 + erf(f / sqrt 2)), as exporters write
// GELU (ONNX before op set 20 has no Gelu op), becomes the registry's gelu(f): one pass over the
// data instead of five. Matched: d = div(f, sqrt 2) or mul(f, 1/sqrt 2); e = erf(d); a = add(e, 1);
// y the product of f, 0.5 and a in any order and grouping (torch writes (f * 0.5) * a, Spore's
// exporter f * (0.5 * a)), each intermediate read once, the constants checked to 1e-6.
#include <cmath>
#include <utility>

#include "graph/passes/pass_util.h"
#include "spore/op_registry.h"

namespace spore::graph {

PassStats substitute_gelu(Graph& g) {
  PassStats stats = start_stats("gelu", g);
  const auto writers = writers_of_values(g);
  const Readers readers(g);
  auto producer = [&](ValueId v) { return g.value(v).kind == ValueKind::kNode ? g.value(v).node : -1; };
  // The node making v when it is a binary `op`, else -1.
  auto binary = [&](ValueId v, OpId op) {
    const int p = producer(v);
    return p >= 0 && g.node(p).op() == op && g.node(p).num_inputs == 2 ? p : -1;
  };
  auto near = [](double x, double want) { return std::abs(x - want) <= 1e-6 * std::abs(want); };
  // The operand of binary node n that is not the scalar constant `want`, or kNoValue.
  auto other_than = [&](int n, double want) -> ValueId {
    for (int k = 0; n >= 0 && k < 2; ++k) {
      double c;
      if (scalar_constant(g, g.inputs(n)[(size_t)k], writers, c) && near(c, want)) return g.inputs(n)[(size_t)(1 - k)];
    }
    return kNoValue;
  };
  auto once = [&](ValueId v, int reader) { return readers.only(v) == reader && writers[v].empty(); };
  std::vector<bool> remove(g.num_nodes(), false);
  std::vector<std::pair<int, ValueId>> gelus;  // (the product node replaced, f)
  for (int yn = 0; yn < (int)g.num_nodes(); ++yn) {
    const Node& y = g.node(yn);
    if (y.op() != OpId::k_mul || y.num_inputs != 2 || y.num_outputs != 1 || remove[(size_t)yn]) continue;
    // y is a product of three factors, one of its operands being a product read only by y:
    // 0.5, a = add(erf(d), 1) and f, in any order and grouping.
    for (int k = 0; k < 2; ++k) {
      const ValueId inner = g.inputs(yn)[(size_t)k];
      const int innern = binary(inner, OpId::k_mul);
      if (innern < 0 || !once(inner, yn) || remove[(size_t)innern]) continue;
      const std::pair<ValueId, int> factors[3] = {  // (factor, the mul node reading it)
          {g.inputs(yn)[(size_t)(1 - k)], yn},
          {g.inputs(innern)[0], innern},
          {g.inputs(innern)[1], innern}};
      int half = -1, add = -1;
      for (int q = 0; q < 3; ++q) {
        double c;
        if (half < 0 && scalar_constant(g, factors[q].first, writers, c) && near(c, 0.5)) half = q;
        else if (add < 0 && binary(factors[q].first, OpId::k_add) >= 0 && once(factors[q].first, factors[q].second))
          add = q;
      }
      if (half < 0 || add < 0) continue;
      const ValueId f = factors[3 - half - add].first, a = factors[add].first;
      const int an = binary(a, OpId::k_add);
      const ValueId e = other_than(an, 1.0);
      if (e == kNoValue || !once(e, an)) continue;
      const int pe = producer(e);
      if (pe < 0 || g.node(pe).op() != OpId::k_erf) continue;
      const ValueId d = g.inputs(pe)[0];
      if (!once(d, pe)) continue;
      double c;
      ValueId fd = kNoValue;
      if (const int dn = binary(d, OpId::k_div); dn >= 0 && scalar_constant(g, g.inputs(dn)[1], writers, c) && near(c, std::sqrt(2.0)))
        fd = g.inputs(dn)[0];
      if (const int dm = binary(d, OpId::k_mul); dm >= 0) fd = other_than(dm, 1.0 / std::sqrt(2.0));
      const TensorMeta& fm = g.value(f).meta;
      const TensorMeta& ym = g.value(g.outputs(yn)[0]).meta;
      if (fd == kNoValue || fd != f || fm.dtype != ym.dtype || fm.shape != ym.shape) continue;
      for (int n : {yn, innern, an, pe, producer(d)}) remove[(size_t)n] = true;
      gelus.emplace_back(yn, f);
      ++stats.ops_fused;
      break;
    }
  }
  // Last first: each gelu goes where its product ran, and earlier positions still hold.
  for (auto it = gelus.rbegin(); it != gelus.rend(); ++it) {
    const ValueId y = g.outputs(it->first)[0];
    const TensorMeta out = g.value(y).meta;
    const int at = g.insert_node(it->first, op_def(OpId::k_gelu), Attrs{}, std::span<const ValueId>(&it->second, 1),
                                 std::span<const TensorMeta>(&out, 1));
    remove.insert(remove.begin() + at, false);
    g.replace_uses(y, g.outputs(at)[0]);
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
