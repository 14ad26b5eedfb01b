// ai.onnx.preview.training's optimizer steps (Adagrad, Adam, Momentum) as the elementwise
// formulas of the spec's reference: inputs R (the learning rate), T (the step count), then for each
// of n tensors X, G and the optimizer's state; outputs the new X of each, then each new state.
// Computed in float64 (the reference's numpy promotes the scalars' arithmetic to it) and rounded
// once to each input's type.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {
namespace {

struct Step {
  NodeCtx& c;
  uint32_t e(OpId op, std::vector<uint32_t> ins) { return c.m.emit(c, op, ins); }
  uint32_t k(double v) { return c.m.scalar(v, DType::kFloat64); }
  uint32_t f64(uint32_t v) { return c.m.cast_to(c, v, DType::kFloat64); }
  uint32_t in(size_t i) { return c.m.cast_to(c, c.at(i), DType::kFloat64); }
  uint32_t out(uint32_t v, size_t like) { return c.m.cast_to(c, v, c.m.dtype(c.at(like))); }
};

// The number of tensors n, with `per` inputs each after R and T.
int64_t groups(NodeCtx& c, int64_t per) {
  const int64_t rest = (int64_t)c.in.size() - 2;
  if (rest < per || rest % per != 0) c.bad("the inputs are R, T and " + std::to_string(per) + " tensors per optimized tensor");
  return rest / per;
}

std::vector<uint32_t> adagrad(NodeCtx& c) {
  Step s{c};
  const int64_t n = groups(c, 3);
  const double decay = c.f("decay_factor", 0.0), eps = c.f("epsilon", 0.0), norm = c.f("norm_coefficient", 0.0);
  const uint32_t r = s.f64(c.at(0)), t = s.f64(c.at(1));
  const uint32_t rate = s.e(OpId::k_div, {r, s.e(OpId::k_add, {s.k(1), s.e(OpId::k_mul, {t, s.k(decay)})})});
  std::vector<uint32_t> xs, hs;
  for (int64_t i = 0; i < n; ++i) {
    const size_t xi = 2 + i, gi = 2 + n + i, hi = 2 + 2 * n + i;
    const uint32_t x = s.in(xi), g = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(norm), x}), s.in(gi)});
    const uint32_t h = s.e(OpId::k_add, {s.in(hi), s.e(OpId::k_mul, {g, g})});
    const uint32_t root = s.e(OpId::k_add, {s.e(OpId::k_sqrt, {h}), s.k(eps)});
    xs.push_back(s.out(s.e(OpId::k_sub, {x, s.e(OpId::k_div, {s.e(OpId::k_mul, {rate, g}), root})}), xi));
    hs.push_back(s.out(h, hi));
  }
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<uint32_t> adam(NodeCtx& c) {
  Step s{c};
  const int64_t n = groups(c, 4);
  const double alpha = c.f("alpha", 0.9), beta = c.f("beta", 0.999), eps = c.f("epsilon", 0.0), norm = c.f("norm_coefficient", 0.0),
               post = c.f("norm_coefficient_post", 0.0);
  const uint32_t r = s.f64(c.at(0)), t = s.f64(c.at(1));
  // r * sqrt(1 - beta^t) / (1 - alpha^t) after the first step, r at it.
  const uint32_t bias = s.e(OpId::k_div, {s.e(OpId::k_sqrt, {s.e(OpId::k_sub, {s.k(1), s.e(OpId::k_pow, {s.k(beta), t})})}),
                                          s.e(OpId::k_sub, {s.k(1), s.e(OpId::k_pow, {s.k(alpha), t})})});
  const uint32_t rate = s.e(OpId::k_where, {s.e(OpId::k_gt, {t, s.k(0)}), s.e(OpId::k_mul, {r, bias}), r});
  std::vector<uint32_t> xs, vs, hs;
  for (int64_t i = 0; i < n; ++i) {
    const size_t xi = 2 + i, gi = 2 + n + i, vi = 2 + 2 * n + i, hi = 2 + 3 * n + i;
    const uint32_t x = s.in(xi), g = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(norm), x}), s.in(gi)});
    const uint32_t v = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(alpha), s.in(vi)}), s.e(OpId::k_mul, {s.k(1 - alpha), g})});
    const uint32_t h = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(beta), s.in(hi)}), s.e(OpId::k_mul, {s.k(1 - beta), s.e(OpId::k_mul, {g, g})})});
    const uint32_t root = s.e(OpId::k_add, {s.e(OpId::k_sqrt, {h}), s.k(eps)});
    const uint32_t stepped = s.e(OpId::k_sub, {x, s.e(OpId::k_mul, {rate, s.e(OpId::k_div, {v, root})})});
    xs.push_back(s.out(s.e(OpId::k_mul, {s.k(1 - post), stepped}), xi));
    vs.push_back(s.out(v, vi));
    hs.push_back(s.out(h, hi));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  xs.insert(xs.end(), hs.begin(), hs.end());
  return xs;
}

std::vector<uint32_t> momentum(NodeCtx& c) {
  Step s{c};
  const int64_t n = groups(c, 3);
  const double alpha = c.f("alpha", 0.0), beta = c.f("beta", 0.0), norm = c.f("norm_coefficient", 0.0);
  const std::string mode = c.s("mode", "standard");
  if (mode != "standard" && mode != "nesterov") c.bad("mode '" + mode + "'");
  const uint32_t r = s.f64(c.at(0)), t = s.f64(c.at(1));
  const uint32_t b = s.e(OpId::k_where, {s.e(OpId::k_gt, {t, s.k(0)}), s.k(beta), s.k(1)});
  std::vector<uint32_t> xs, vs;
  for (int64_t i = 0; i < n; ++i) {
    const size_t xi = 2 + i, gi = 2 + n + i, vi = 2 + 2 * n + i;
    const uint32_t x = s.in(xi), g = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(norm), x}), s.in(gi)});
    const uint32_t v = s.e(OpId::k_add, {s.e(OpId::k_mul, {s.k(alpha), s.in(vi)}), s.e(OpId::k_mul, {b, g})});
    const uint32_t d = mode == "standard" ? v : s.e(OpId::k_add, {g, s.e(OpId::k_mul, {s.k(alpha), v})});
    xs.push_back(s.out(s.e(OpId::k_sub, {x, s.e(OpId::k_mul, {r, d})}), xi));
    vs.push_back(s.out(v, vi));
  }
  xs.insert(xs.end(), vs.begin(), vs.end());
  return xs;
}

}  // namespace

void add_training_ops(HandlerTable& t) {
  t["ai.onnx.preview.training/Adagrad"] = adagrad;
  t["ai.onnx.preview.training/Adam"] = adam;
  t["ai.onnx.preview.training/Momentum"] = momentum;
}

}  // namespace spore::onnx::detail
