// Convolution epilogues (NOTE [Convolution epilogues]): the elementwise tail that reads a
// fused_conv2d's output and nothing else but one-element constants (SiLU as x * sigmoid(x),
// hard-swish, GELU, tanh, a scale) becomes the convolution's epilogue program, which its kernel
// runs on each output plane while the plane is still in cache, instead of a separate pass over
// the whole output after it left it. Runs after elementwise fusion, so a tail is already one
// fused_elementwise node (or a single fusable op), and its program is taken as it is, its
// inputs renumbered: the convolution's output becomes %0, the constants %1, %2, ...
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "graph/passes/pass_util.h"
#include "ops/fused_program.h"
#include "spore/error.h"

namespace spore::graph {

namespace {

struct Tail {
  int conv = -1;
  ValueId out = kNoValue;  // the tail's output (a value id: node positions shift as nodes go in)
  ops::FusedProgram program;
  std::vector<ValueId> scalars;  // the epilogue's %1, %2, ...
};

// The program of node e as an epilogue over y, or nullopt when e is not a tail it can take.
std::optional<ops::FusedProgram> tail_program(const Graph& g, int e, ValueId y,
                                              const std::vector<std::vector<int>>& writers,
                                              std::vector<ValueId>& scalars) {
  const Node& n = g.node(e);
  if (n.num_outputs != 1 || n.def->writes_mask != 0 || !g.subgraphs(e).empty()) return std::nullopt;
  const ValueId out = g.outputs(e)[0];
  const TensorMeta &om = g.value(out).meta, &ym = g.value(y).meta;
  if (om.dtype != DType::kFloat32 || om.shape != ym.shape || !writers[out].empty()) return std::nullopt;
  std::span<const ValueId> in = g.inputs(e);
  // Input k of e -> the epilogue's input index.
  std::vector<int32_t> index(in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] == y) {
      index[k] = 0;
      continue;
    }
    if (!is_constant(g, in[k], writers) || g.value(in[k]).meta.shape.numel() != 1) return std::nullopt;
    auto at = std::find(scalars.begin(), scalars.end(), in[k]);
    index[k] = 1 + (int32_t)(at - scalars.begin());
    if (at == scalars.end()) scalars.push_back(in[k]);
  }
  ops::FusedProgram p;
  if (n.op() == OpId::k_fused_elementwise) {
    p = ops::parse_fused_program(n.attrs.s(0));
    for (ops::FusedInstr& ins : p.instrs)
      for (int a = 0; a < ins.num_args; ++a)
        if (ins.args[a] >= 0) ins.args[a] = index[(size_t)ins.args[a]];
  } else {
    if (in.size() > 3) return std::nullopt;
    ops::FusedInstr ins;
    ins.op = n.op();
    if (ins.op == OpId::k_cast) ins.cast_to = n.attrs.dtype(0);
    ins.num_args = (int)in.size();
    for (size_t k = 0; k < in.size(); ++k) ins.args[k] = index[k];
    p.instrs.push_back(ins);
  }
  p.num_inputs = 1 + (int)scalars.size();
  // Only what the fused kernel computes exactly as the standalone kernels do (the typing rule
  // the elementwise fusion pass uses), ending in the tail's own dtype.
  std::vector<DType> dtypes{DType::kFloat32};
  for (ValueId s : scalars) dtypes.push_back(g.value(s).meta.dtype);
  try {
    ops::type_fused_program(p, dtypes);
  } catch (const Error&) {
    return std::nullopt;
  }
  for (const ops::FusedInstr& ins : p.instrs)
    if (ins.op != OpId::k_cast && ins.op != OpId::k_where && !op_def(ins.op).kernel(kCpuBackend, ins.compute))
      return std::nullopt;
  if (p.instrs.back().result != DType::kFloat32) return std::nullopt;
  return p;
}

}  // namespace

PassStats fuse_conv_epilogues(Graph& g) {
  PassStats stats = start_stats("epilogue", g);
  const auto writers = writers_of_values(g);
  const Readers readers(g);
  std::vector<Tail> tails;
  std::vector<bool> remove(g.num_nodes(), false);
  for (int c = 0; c < (int)g.num_nodes(); ++c) {
    const Node& conv = g.node(c);
    if (conv.op() != OpId::k_fused_conv2d || conv.num_inputs != 3 || (conv.attrs.size() > 6 && !conv.attrs.s(6).empty()))
      continue;
    const ValueId y = g.outputs(c)[0];
    if (g.value(y).meta.dtype != DType::kFloat32 || !writers[y].empty()) continue;
    const int e = readers.only(y);
    if (e < 0) continue;
    Tail t;
    std::optional<ops::FusedProgram> p = tail_program(g, e, y, writers, t.scalars);
    if (!p) continue;
    t.conv = c, t.out = g.outputs(e)[0], t.program = std::move(*p);
    remove[(size_t)c] = remove[(size_t)e] = true;
    stats.ops_fused += 1;
    stats.bytes_saved += value_bytes(g, y);
    tails.push_back(std::move(t));
  }
  // Last convolution first, so the earlier ones' positions still hold (a tail may lie past a later
  // convolution: its output is kept by value id). The new node runs where the convolution ran: the tail read only its output and constants, and its readers come later.
  for (auto it = tails.rbegin(); it != tails.rend(); ++it) {
    const Node conv = g.node(it->conv);
    std::vector<ValueId> ins(g.inputs(it->conv).begin(), g.inputs(it->conv).end());
    ins.insert(ins.end(), it->scalars.begin(), it->scalars.end());
    const TensorMeta out = g.value(it->out).meta;
    const Attrs& a = conv.attrs;
    const Attrs attrs = Attrs::of(a.ints(0), a.ints(1), a.ints(2), a.i(3), a.f(4), a.f(5), ops::format_fused_program(it->program));
    const int at = g.insert_node(it->conv, op_def(OpId::k_fused_conv2d), attrs, ins, std::span<const TensorMeta>(&out, 1));
    remove.insert(remove.begin() + at, false);
    g.replace_uses(it->out, g.outputs(at)[0]);
  }
  g.remove_nodes(remove);
  return finish_stats(stats, g);
}

}  // namespace spore::graph
