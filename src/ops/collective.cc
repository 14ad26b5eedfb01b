// Collective ops (NOTE [Collective ops] in docs/design.md): all_reduce, broadcast, all_gather,
// reduce_scatter and barrier as registry rows, so a jit trace places them in the graph and the
// tape differentiates them. Their kernels reach the other processes through the CollectiveRuntime
// spore::dist installs (include/spore/collective.h); this file holds the shapes, dtypes and
// backward rules, which need no communication library.
//
// Attributes make a node self-describing: all_gather and reduce_scatter carry the group size
// their output shape was inferred for (a graph compiled for 2 ranks refuses to run on 4), and
// all_reduce carries whether its sum is formed in rank order (bitwise reproducible).
//
// Backward rules, for ranks r = 0..n-1, each with its own loss L_r, whose sum the job minimises:
//   all_reduce sum:  y = sum_r x_r on every rank, so dL/dx_r = sum_r' g_r' = all_reduce_sum(g);
//   all_reduce mean: all_reduce_mean(g), by the same argument with 1/n;
//   all_reduce max:  the summed gradient reaches the ranks whose x equals the maximum (each of
//                    them, on ties), zero elsewhere;
//   broadcast:       only the root's x reaches anyone: the root gets all_reduce_sum(g), every
//                    other rank zeros (the all-reduce runs on every rank, so all issue the same
//                    collectives);
//   all_gather:      rank r's block of every rank's g, summed: reduce_scatter_sum(g);
//   reduce_scatter:  sum: all_gather(g); mean: all_gather(g) / n; max: all_gather(g) where x
//                    equals all_gather(y);
//   barrier:         passes its input through, and the gradient too (no barrier in backward).
#include <string>

#include "op_families.h"
#include "spore/collective.h"
#include "spore/ops.h"

namespace spore {

namespace {
CollectiveRuntime* g_runtime = nullptr;
}  // namespace

void set_collective_runtime(CollectiveRuntime* runtime) {
  g_runtime = runtime;
}
CollectiveRuntime* collective_runtime() {
  return g_runtime;
}
int collective_rank() {
  return g_runtime ? g_runtime->rank() : 0;
}
int collective_size() {
  return g_runtime ? g_runtime->size() : 1;
}

namespace ops {

namespace {

constexpr int64_t kSum = (int64_t)CollectiveReduce::kSum, kMean = (int64_t)CollectiveReduce::kMean,
                  kMax = (int64_t)CollectiveReduce::kMax;

void check_reduce(const InferArgs& a, int64_t op) {
  const DType t = a.inputs[0].dtype();
  if (op < kSum || op > kMax)
    op_error(a.def, ErrorCode::kValue, "op is " + std::to_string(op) + "; use 0 (sum), 1 (mean) or 2 (max)");
  if (t == DType::kBool)
    op_error(a.def, ErrorCode::kDType, "bool tensors cannot be reduced across processes; cast to int32 first");
  if (op == kMean && !is_floating(t))
    op_error(a.def, ErrorCode::kDType, std::string("the mean of ") + dtype_name(t) + " values is not " +
                                           dtype_name(t) + "; cast to float32 first");
}

int64_t group_size_attr(const InferArgs& a, int k) {
  const int64_t n = a.attrs.i(k);
  if (n < 1) op_error(a.def, ErrorCode::kValue, "group_size is " + std::to_string(n) + "; it counts processes, >= 1");
  return n;
}

void infer_all_reduce(const InferArgs& a, Inference& out) {
  check_reduce(a, a.attrs.i(0));
  infer_same_as_input(a, out);
}

void infer_broadcast(const InferArgs& a, Inference& out) {
  if (a.attrs.i(0) < 0) op_error(a.def, ErrorCode::kValue, "root is " + std::to_string(a.attrs.i(0)) + "; ranks count from 0");
  infer_same_as_input(a, out);
}

void infer_all_gather(const InferArgs& a, Inference& out) {
  const int64_t n = group_size_attr(a, 0);
  Shape s = a.inputs[0].shape();
  if (s.ndim() == 0)
    s = Shape{n};
  else
    s[0] *= n;
  out.outputs[0] = {s, a.inputs[0].dtype()};
  out.compute = a.inputs[0].dtype();
}

void infer_reduce_scatter(const InferArgs& a, Inference& out) {
  check_reduce(a, a.attrs.i(0));
  const int64_t n = group_size_attr(a, 1);
  Shape s = a.inputs[0].shape();
  if (s.ndim() == 0 || s[0] % n != 0)
    op_error(a.def, ErrorCode::kShape, "the first axis of " + s.str() + " must split evenly into " + std::to_string(n) +
                                           " ranks; pad it to a multiple of " + std::to_string(n));
  s[0] /= n;
  out.outputs[0] = {s, a.inputs[0].dtype()};
  out.compute = a.inputs[0].dtype();
}

Tensor all_reduce_node(const Tensor& x, int64_t op, bool in_rank_order) {
  return dispatch1(OpId::k_all_reduce, {x}, Attrs::of(op, in_rank_order));
}
Tensor all_gather_node(const Tensor& x, int64_t n) {
  return dispatch1(OpId::k_all_gather, {x}, Attrs::of(n));
}

// Where x holds the value the reduction picked: the gradient's mask for max.
Tensor picked(const Tensor& x, const Tensor& y, const Tensor& like) {
  return cast(eq(x, y), like.dtype());
}

std::vector<Tensor> all_reduce_backward(const BackwardArgs& b) {
  const Tensor& g = b.grad_outputs[0];
  const int64_t op = b.attrs.i(0);
  const bool ordered = b.attrs.b(1);
  if (op == kMax) {
    Tensor summed = all_reduce_node(g, kSum, ordered);
    return {mul(picked(b.inputs[0], b.outputs[0], summed), summed)};
  }
  return {all_reduce_node(g, op, ordered)};
}

std::vector<Tensor> broadcast_backward(const BackwardArgs& b) {
  Tensor summed = all_reduce_node(b.grad_outputs[0], kSum, false);
  return {collective_rank() == b.attrs.i(0) ? summed : mul(summed, 0.0)};
}

std::vector<Tensor> all_gather_backward(const BackwardArgs& b) {
  return {dispatch1(OpId::k_reduce_scatter, {b.grad_outputs[0]}, Attrs::of(kSum, b.attrs.i(0)))};
}

std::vector<Tensor> reduce_scatter_backward(const BackwardArgs& b) {
  const int64_t op = b.attrs.i(0), n = b.attrs.i(1);
  Tensor gathered = all_gather_node(b.grad_outputs[0], n);
  if (op == kMean) return {div(gathered, (double)n)};
  if (op == kMax) return {mul(picked(b.inputs[0], all_gather_node(b.outputs[0], n), gathered), gathered)};
  return {gathered};
}

std::vector<Tensor> barrier_backward(const BackwardArgs& b) {
  return {b.grad_outputs[0]};
}

OpFacts collective_facts() {
  OpFacts f = not_elementwise();
  f.collective = true;
  return f;
}

}  // namespace

void define_collective_ops(OpTable& table) {
  // all_reduce(x; op, in_rank_order): every rank gets the reduction of every rank's x.
  OpDef& ar = define(table, OpId::k_all_reduce, 1, {{"op", AttrKind::kInt}, {"in_rank_order", AttrKind::kBool}});
  ar.facts = collective_facts();
  ar.infer = infer_all_reduce;
  ar.backward = all_reduce_backward;
  // broadcast(x; root): every rank gets the root's x (the same shape and dtype on every rank).
  OpDef& bc = define(table, OpId::k_broadcast, 1, {{"root", AttrKind::kInt}});
  bc.facts = collective_facts();
  bc.infer = infer_broadcast;
  bc.backward = broadcast_backward;
  // all_gather(x; group_size): the ranks' x concatenated along axis 0 in rank order.
  OpDef& ag = define(table, OpId::k_all_gather, 1, {{"group_size", AttrKind::kInt}});
  ag.facts = collective_facts();
  ag.infer = infer_all_gather;
  ag.backward = all_gather_backward;
  // reduce_scatter(x; op, group_size): rank r gets block r (of group_size along axis 0) of the
  // reduction of every rank's x.
  OpDef& rs = define(table, OpId::k_reduce_scatter, 1, {{"op", AttrKind::kInt}, {"group_size", AttrKind::kInt}});
  rs.facts = collective_facts();
  rs.infer = infer_reduce_scatter;
  rs.backward = reduce_scatter_backward;
  // barrier(x): x, once every rank has reached its barrier; the input orders it in a graph.
  OpDef& ba = define(table, OpId::k_barrier, 1);
  ba.facts = collective_facts();
  ba.infer = infer_same_as_input;
  ba.backward = barrier_backward;
}

}  // namespace ops
}  // namespace spore
