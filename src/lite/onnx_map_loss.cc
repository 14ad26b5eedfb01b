// ONNX's NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss written with registry ops
// (NOTE [ONNX attention and losses]): every reduction (none, sum, mean), class weights and
// ignore_index, over [N, C] or [N, C, d1, ..., dk] inputs; SoftmaxCrossEntropyLoss is the former
// over LogSoftmax along the class axis, with the log-probabilities as its optional second output.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

// The loss of log-probabilities x [N, C, ...] for the classes `target` [N, ...].
uint32_t nll(NodeCtx& c, uint32_t x, uint32_t target, uint32_t weight) {
  Mapper& m = c.m;
  const Shape xs = m.shape(x), ts = m.shape(target);
  if (xs.ndim() < 2) c.bad("the input must be [N, C] or [N, C, d1, ...], not " + std::to_string(xs.ndim()) + "-D");
  if (ts.ndim() != xs.ndim() - 1 || ts[0] != xs[0]) c.bad("the target must be [N, d1, ...] for an input [N, C, d1, ...]");
  for (int dim = 1; dim < ts.ndim(); ++dim)
    if (ts[dim] != xs[dim + 1]) c.bad("the target's extent " + std::to_string(dim) + " differs from the input's");
  if (is_floating(m.dtype(target)) || m.dtype(target) == DType::kBool) c.bad("the target must hold integer classes");
  const DType t = m.dtype(x);
  const int64_t classes = xs[1];
  const std::vector<int64_t> tshape(ts.begin(), ts.end());
  uint32_t cls = m.cast_to(c, target, DType::kInt64);
  // Ignored positions contribute nothing; their class is read as 0 so that the gather stays in
  // range, and their loss and weight are zeroed.
  uint32_t valid = kNone;
  if (c.has("ignore_index")) {
    valid = m.emit(c, OpId::k_ne, {cls, m.scalar((double)c.i("ignore_index", 0), DType::kInt64)});
    cls = m.emit(c, OpId::k_where, {valid, cls, m.scalar(0, DType::kInt64)});
  }
  std::vector<int64_t> lifted = tshape;
  lifted.insert(lifted.begin() + 1, 1);
  uint32_t picked = m.reshape(c, m.emit(c, OpId::k_gather, {x, m.reshape(c, cls, lifted)}, Attrs::of(int64_t{1})), tshape);
  uint32_t loss = m.emit(c, OpId::k_neg, {picked});
  uint32_t w = kNone;  // the weight of each position
  if (weight != kNone) {
    if (m.shape(weight).ndim() != 1 || m.shape(weight)[0] != classes) c.bad("the weight must be [C]");
    w = m.reshape(c, m.emit(c, OpId::k_index_select, {m.cast_to(c, weight, t), m.reshape(c, cls, {-1})}, Attrs::of(int64_t{0})), tshape);
  }
  if (valid != kNone) {
    const uint32_t keep = m.cast_to(c, valid, t);
    w = w == kNone ? keep : m.emit(c, OpId::k_mul, {w, keep});
  }
  if (w != kNone) loss = m.emit(c, OpId::k_mul, {loss, w});
  const std::string reduction = c.s("reduction", "mean");
  std::vector<int64_t> all((size_t)ts.ndim());
  for (size_t a = 0; a < all.size(); ++a) all[a] = (int64_t)a;
  if (reduction == "none") return loss;
  const uint32_t sum = m.emit(c, OpId::k_sum, {loss}, Attrs::of(all, false));
  if (reduction == "sum") return sum;
  if (reduction != "mean") c.bad("reduction '" + reduction + "' is not none, sum or mean");
  if (w == kNone) return m.emit(c, OpId::k_div, {sum, m.scalar((double)m.shape(loss).numel(), t)});
  return m.emit(c, OpId::k_div, {sum, m.emit(c, OpId::k_sum, {w}, Attrs::of(all, false))});
}

std::vector<uint32_t> nll_loss(NodeCtx& c) {
  const uint32_t x = c.at(0);
  if (!is_floating(c.m.dtype(x))) c.bad("the input must be floating-point");
  return {nll(c, x, c.at(1), c.given(2) ? c.at(2) : kNone)};
}

std::vector<uint32_t> softmax_cross_entropy(NodeCtx& c) {
  const uint32_t x = c.at(0);
  if (!is_floating(c.m.dtype(x))) c.bad("the scores must be floating-point");
  if (c.m.shape(x).ndim() < 2) c.bad("the scores must be [N, C] or [N, C, d1, ...]");
  const uint32_t log_prob = c.m.emit(c, OpId::k_log_softmax, {x}, Attrs::of(int64_t{1}));
  return {nll(c, log_prob, c.at(1), c.given(2) ? c.at(2) : kNone), log_prob};
}

}  // namespace

void add_loss_ops(HandlerTable& t) {
  t["NegativeLogLikelihoodLoss"] = nll_loss;
  t["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy;
}

}  // namespace spore::onnx::detail
