// Memory planning by liveness (NOTE [Memory planning]).
#include "graph/passes/memory_plan.h"

#include <algorithm>

namespace spore::graph {

// The op's row says (NOTE [Op facts]).
bool may_write_in_place(OpId op) {
  return op_def(op).facts.in_place == InPlace::kYes;
}

MemoryPlan plan_memory(const Graph& g, const std::vector<bool>& plannable) {
  const size_t nv = g.num_values();
  const int nn = (int)g.num_nodes();
  MemoryPlan plan;
  plan.buffer_of.assign(nv, -1);
  plan.last_use.assign(nv, -1);

  // Views share their base's memory: liveness is tracked per root.
  std::vector<ValueId> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = (ValueId)v;
  for (int i = 0; i < nn; ++i) {
    const Node& n = g.node(i);
    if (n.def->view && n.num_inputs > 0)
      for (ValueId o : g.outputs(i)) root[o] = root[g.inputs(i)[0]];
  }
  for (int i = 0; i < nn; ++i)
    for (ValueId v : g.inputs(i)) plan.last_use[root[v]] = std::max(plan.last_use[root[v]], i);
  for (ValueId v : g.graph_outputs()) plan.last_use[root[v]] = nn;
  for (size_t v = 0; v < nv; ++v) plan.last_use[v] = plan.last_use[root[v]];

  auto bytes_of = [&](ValueId v) {
    const TensorMeta& m = g.value(v).meta;
    return (int64_t)m.shape.numel() * (int64_t)dtype_size(m.dtype);
  };
  std::vector<int32_t> free_buffers;
  std::vector<bool> handed(nv, false);  // its buffer passed to an output of its last reader
  int64_t live = 0;
  std::vector<std::vector<ValueId>> dies_at(nn + 1);
  for (size_t v = 0; v < nv; ++v)
    if (root[v] == v && plan.last_use[v] >= 0 && plan.last_use[v] < nn && g.value((ValueId)v).kind == ValueKind::kNode)
      dies_at[plan.last_use[v]].push_back((ValueId)v);

  for (int i = 0; i < nn; ++i) {
    const Node& n = g.node(i);
    auto ins = g.inputs(i);
    auto outs = g.outputs(i);
    for (size_t o = 0; o < outs.size(); ++o) {
      const ValueId v = outs[o];
      if (!plannable[v] || root[v] != v) {
        if (root[v] == v && g.value(v).kind == ValueKind::kNode) live += bytes_of(v);  // unplanned own allocation
        continue;
      }
      const int64_t need = bytes_of(v);
      live += need;
      int32_t chosen = -1;
      // In place: an input dying here, planned, of the same shape and dtype, viewed by nothing.
      if (o == 0 && may_write_in_place(n.op())) {
        for (ValueId in : ins) {
          if (root[in] != in || plan.buffer_of[in] < 0 || plan.last_use[in] != i) continue;
          const TensorMeta& a = g.value(in).meta;
          const TensorMeta& b = g.value(v).meta;
          if (a.shape != b.shape || a.dtype != b.dtype) continue;
          if (std::count(ins.begin(), ins.end(), in) != 1) continue;
          chosen = plan.buffer_of[in];
          handed[in] = true;  // not freed below: the output lives on in it
          ++plan.in_place;
          break;
        }
      }
      if (chosen < 0) {
        // Best fit among the free buffers; else the largest free one, grown to fit (a new
        // buffer beside idle smaller ones would make the sum exceed the live peak); else a new one.
        int best = -1, largest = -1;
        for (int k = 0; k < (int)free_buffers.size(); ++k) {
          int64_t b = plan.buffer_bytes[free_buffers[k]];
          if (b >= need && (best < 0 || b < plan.buffer_bytes[free_buffers[best]])) best = k;
          if (largest < 0 || b > plan.buffer_bytes[free_buffers[largest]]) largest = k;
        }
        if (best < 0 && largest >= 0) {
          best = largest;
          plan.buffer_bytes[free_buffers[best]] = need;
        }
        if (best >= 0) {
          chosen = free_buffers[best];
          free_buffers.erase(free_buffers.begin() + best);
        } else {
          chosen = (int32_t)plan.buffer_bytes.size();
          plan.buffer_bytes.push_back(need);
        }
      }
      plan.buffer_of[v] = chosen;
    }
    plan.unplanned_peak = std::max(plan.unplanned_peak, live);
    for (ValueId v : dies_at[i]) {
      live -= bytes_of(v);
      if (plan.buffer_of[v] >= 0 && !handed[v]) free_buffers.push_back(plan.buffer_of[v]);
    }
  }
  for (int64_t b : plan.buffer_bytes) plan.planned_bytes += b;
  return plan;
}

}  // namespace spore::graph
