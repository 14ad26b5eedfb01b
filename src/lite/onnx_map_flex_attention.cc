// ai.onnx.preview's FlexAttention (onnx 1.23's preview domain) written with registry ops, as the
// spec's reference computes it: grouped-query heads repeated, scores = (Q * sqrt(scale)) (K *
// sqrt(scale))^T in Q's dtype (scale 1/sqrt(E) by default), then in the softmax precision
// (float32 for the 16-bit types unless softmax_precision says otherwise) the score_mod subgraph,
// the softmax over the keys, the prob_mod subgraph and the product with V, rounded once to V's
// dtype. The mod subgraphs are mapped in place: their one input bound to the tensor, their
// names local to them.
#include <cmath>

#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// graph(x): the subgraph attribute `name` mapped with its one input bound to x.
uint32_t apply_mod(NodeCtx& c, const std::string& name, uint32_t x) {
  Mapper& m = c.m;
  const AttributeProto* a = find_attr(c.node, name);
  if (!a) return x;
  if (a->type() != AttributeProto::GRAPH) c.bad(name + " is not a graph");
  const GraphProto& g = a->g();
  if (g.input_size() != 1 || g.output_size() != 1) c.bad(name + " must take one input and return one output");
  if (m.depth >= kMaxSubgraphDepth) c.unsupported("subgraphs nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  const std::map<std::string, uint32_t> outer = m.names;
  ++m.depth;
  m.names[g.input(0).name()] = x;
  for (int k = 0; k < g.initializer_size(); ++k)
    m.names[g.initializer(k).name()] = m.constant(tensor_of(g.initializer(k), c.where + " " + name + " initializer"));
  map_nodes(m, g, c.where + " " + name);
  auto it = m.names.find(g.output(0).name());
  if (it == m.names.end()) c.bad(name + " output '" + g.output(0).name() + "' is made by no node");
  const uint32_t y = it->second;
  --m.depth;
  m.names = outer;
  if (m.shape(y) != m.shape(x)) c.bad(name + " changes the shape " + m.shape(x).str() + " to " + m.shape(y).str());
  return m.cast_to(c, y, m.dtype(x));
}

std::vector<uint32_t> flex_attention(NodeCtx& c) {
  Mapper& m = c.m;
  uint32_t q = c.at(0), k = c.at(1), v = c.at(2);
  const Shape qs = m.shape(q), ks = m.shape(k), vs = m.shape(v);
  if (qs.ndim() != 4 || ks.ndim() != 4 || vs.ndim() != 4) c.bad("Q, K and V must be 4-D [B, H, L, E]");
  const DType io = m.dtype(q);
  if (!is_floating(io) || m.dtype(k) != io || m.dtype(v) != io) c.bad("Q, K and V must share one floating-point type");
  const int64_t hq = qs[1], hkv = ks[1], e = qs[3];
  if (vs[1] != hkv || vs[2] != ks[2] || ks[3] != e) c.bad("K and V must share heads and length, and K the embedding of Q");
  if (hkv <= 0 || hq % hkv != 0) c.bad("Q's head count must be a multiple of K's");
  if (hq != hkv) {  // each K/V head serves hq / hkv consecutive query heads
    std::vector<int64_t> idx;
    for (int64_t h = 0; h < hq; ++h) idx.push_back(h / (hq / hkv));
    k = m.take(c, k, 1, idx);
    v = m.take(c, v, 1, idx);
  }
  DType precision = io == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  if (c.has("softmax_precision") && !dtype_of((int32_t)c.i("softmax_precision", 1), precision))
    c.unsupported("softmax_precision " + onnx_type_name((int32_t)c.i("softmax_precision", 1)));
  if (!is_floating(precision)) c.bad("softmax_precision must name a floating-point type");
  const double scale = c.has("scale") ? c.f("scale", 1.0) : 1.0 / std::sqrt((double)e);
  const uint32_t root = m.scalar((double)std::sqrt((float)scale), io);
  const uint32_t kt = m.emit(c, OpId::k_permute, {m.emit(c, OpId::k_mul, {k, root})}, Attrs::of(std::vector<int64_t>{0, 1, 3, 2}));
  uint32_t scores = m.cast_to(c, m.emit(c, OpId::k_matmul, {m.emit(c, OpId::k_mul, {q, root}), kt}), precision);
  scores = apply_mod(c, "score_mod", scores);
  uint32_t probs = m.emit(c, OpId::k_softmax, {scores}, Attrs::of(int64_t{-1}));
  probs = apply_mod(c, "prob_mod", probs);
  return {m.cast_to(c, m.emit(c, OpId::k_matmul, {probs, m.cast_to(c, v, precision)}), m.dtype(c.at(2)))};
}

}  // namespace

void add_flex_attention_ops(HandlerTable& t) { t["ai.onnx.preview/FlexAttention"] = flex_attention; }

}  // namespace spore::onnx::detail
