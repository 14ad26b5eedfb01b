// The per-op input factories of the capability matrix (see op_matrix_factories.h). Values are
// chosen to be exact in every dtype (multiples of 1/4, small integers) and inside each op's
// domain, so that a difference from the float64 reference is the op's, not the input's.
#include "op_matrix_factories.h"

#include <array>
#include <cstring>
#include <string>

#include "spore/context.h"
#include "spore/int8.h"
#include "spore/llm.h"
#include "spore/op_registry.h"
#include "spore/ops.h"
#include "spore/quant.h"

namespace spore::probe {

namespace {
enum class Kind { kGeneral, kPositive, kNonZero, kExponent, kUpper, kIndexish };

// Deterministic values of one kind for one dtype (no generator state shared with Spore).
std::vector<double> values(int64_t n, DType t, Kind k, uint32_t seed) {
  std::vector<double> v((size_t)n);
  uint32_t s = seed * 2654435761u + 12345u;
  auto next = [&]() {
    s = s * 1664525u + 1013904223u;
    return (s >> 8) & 0xffff;
  };
  const bool fl = is_floating(t);
  for (auto& x : v) {
    uint32_t r = next();
    if (t == DType::kBool) {
      x = (k == Kind::kPositive || k == Kind::kNonZero) ? 1 : (double)(r & 1);
      continue;
    }
    switch (k) {
      case Kind::kGeneral:  // [-2, 2] in quarters; integers [-3, 3] (uint8 [0, 3])
        x = fl ? (double)((int)(r % 17) - 8) / 4 : t == DType::kUInt8 ? (double)(r % 4) : (double)((int)(r % 7) - 3);
        break;
      case Kind::kPositive:  // [0.25, 3]; integers [1, 4]
        x = fl ? (double)(1 + r % 12) / 4 : (double)(1 + r % 4);
        break;
      case Kind::kNonZero: {  // |x| in [0.5, 2]; integers in [1, 3], signed where the dtype is
        double m = fl ? (double)(2 + r % 7) / 4 : (double)(1 + r % 3);
        x = (t != DType::kUInt8 && (r >> 4 & 1)) ? -m : m;
        break;
      }
      case Kind::kExponent:  // floats [-2, 2] in halves; integers [0, 3]
        x = fl ? (double)((int)(r % 9) - 4) / 2 : (double)(r % 4);
        break;
      case Kind::kUpper:  // [3, 6]: minuends that keep unsigned results non-negative
        x = fl ? 3 + (double)(r % 13) / 4 : (double)(3 + r % 4);
        break;
      case Kind::kIndexish:
        x = (double)(r % 4);
        break;
    }
  }
  return v;
}

// A CPU tensor of dtype `t` holding `v`, built from raw bytes so that no op (not even cast) runs.
Tensor mk(const std::vector<double>& v, const Shape& shape, DType t) {
  std::vector<uint8_t> buf(v.size() * dtype_size(t));
  visit_dtype(t, [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        buf[i] = v[i] != 0;
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        T x((float)v[i]);
        std::memcpy(buf.data() + i * sizeof(T), &x, sizeof(T));
      } else {
        T x = static_cast<T>(v[i]);
        std::memcpy(buf.data() + i * sizeof(T), &x, sizeof(T));
      }
    }
  });
  return Tensor::from_bytes(buf.data(), shape, t, Device::cpu());
}

// A [rows, cols] tensor seen through a transposed view of a [cols, rows] buffer: exercises
// the strided paths of kernels.
Tensor mk_strided(const std::vector<double>& v, int64_t rows, int64_t cols, DType t) {
  Tensor base = mk(v, Shape{cols, rows}, t);
  return Tensor::view_of(base.storage(), base.offset(), Shape{rows, cols}, Shape{1, rows}, t);
}

using Fn = std::function<Tensor(const std::vector<Tensor>&, bool)>;

// Inputs of given shapes and kinds in dtype t (and float64 twins).
OpCase with_inputs(DType t, std::vector<std::pair<Shape, Kind>> specs, Fn fn, bool strided_first = false) {
  OpCase c;
  uint32_t seed = 7;
  for (size_t i = 0; i < specs.size(); ++i) {
    const auto& [shape, kind] = specs[i];
    auto v = values(shape.numel(), t, kind, seed++);
    if (i == 0 && strided_first && shape.ndim() == 2) {
      c.inputs.push_back(mk_strided(v, shape[0], shape[1], t));
      c.ref_inputs.push_back(mk_strided(v, shape[0], shape[1], DType::kFloat64));
    } else {
      c.inputs.push_back(mk(v, shape, t));
      c.ref_inputs.push_back(mk(v, shape, DType::kFloat64));
    }
  }
  c.run = std::move(fn);
  return c;
}

OpFactory binary(Tensor (*op)(const Tensor&, const Tensor&), Kind a = Kind::kGeneral, Kind b = Kind::kGeneral) {
  return [=](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{2, 3}, a}, {Shape{3}, b}},
                       [op](const std::vector<Tensor>& x, bool) { return op(x[0], x[1]); });
  };
}

// matmul_q's samples: values on a grid of 1/64 with a 127/64 in every block of 32, so that q8_0
// (and the kernel's q8 activations) hold them exactly.
std::vector<double> q8_grid(int64_t n, uint32_t seed) {
  std::vector<double> v = values(n, DType::kInt32, Kind::kGeneral, seed);  // integers in [-3, 3]
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 32 == 5 ? 127.0 : v[i] * 29) / 64;
  return v;
}
// A q8_0 weight [3, 32] as its blocks (uint8 [3, 34]).
Tensor q8_0_sample_weight() {
  const std::vector<double> wv = q8_grid(3 * 32, 4);
  std::vector<uint8_t> blocks(3 * 34);
  for (int r = 0; r < 3; ++r) {
    std::vector<float> row(wv.begin() + 32 * r, wv.begin() + 32 * (r + 1));
    quantize_row(GgmlType::kQ8_0, row, std::span<uint8_t>(blocks.data() + 34 * r, 34));
  }
  return Tensor::from_bytes(blocks.data(), Shape{3, 34}, DType::kUInt8, Device::cpu());
}
// Its values [3, 32] in float64, by the reference dequantize_row.
Tensor q8_0_sample_dequantized(const Tensor& w) {
  std::vector<float> deq(3 * 32);
  const std::vector<uint8_t> b = w.to_bytes();
  for (int r = 0; r < 3; ++r)
    dequantize_row(GgmlType::kQ8_0, std::span<const uint8_t>(b.data() + 34 * r, 34),
                   std::span<float>(deq.data() + 32 * r, 32));
  return cast(Tensor::from_vector(deq, Shape{3, 32}), DType::kFloat64);
}

OpFactory unary(Tensor (*op)(const Tensor&), Kind k = Kind::kGeneral) {
  return [=](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{2, 3}, k}}, [op](const std::vector<Tensor>& x, bool) { return op(x[0]); },
                       /*strided_first=*/true);
  };
}

OpFactory one_input(Shape shape, Kind k, Fn fn) {
  return [=](DType t) -> std::optional<OpCase> { return with_inputs(t, {{shape, k}}, fn); };
}

Tensor index_tensor(const std::vector<double>& v, const Shape& s) { return mk(v, s, DType::kInt64); }

// One factory per op of the registry, indexed by OpId (NOTE [Sample inputs]).
struct FactoryTable {
  std::array<OpFactory, kNumOps> at;
  OpFactory& operator[](OpId id) { return at[(size_t)id]; }
};

// 3x3 convolutions that keep the height and width.
Conv2dOptions same_padding() {
  Conv2dOptions o;
  o.padding = {1, 1};
  return o;
}

// An update op's case: the parameter and gradient in t, its state in the state dtype (float64
// for float64 parameters, float32 otherwise, as the ops require), and the updated parameter as
// the result, so the matrix compares what the op wrote.
OpFactory update_case(OpId id, int num_state, Attrs attrs) {
  return [=](DType t) -> std::optional<OpCase> {
    if (!is_floating(t)) return std::nullopt;
    OpCase c = with_inputs(t, {{Shape{2, 3}, Kind::kGeneral}, {Shape{2, 3}, Kind::kGeneral}}, nullptr);
    DType state = t == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
    for (int k = 0; k < num_state; ++k) {
      auto v = values(6, state, Kind::kPositive, 30 + k);  // second moments must be >= 0
      c.inputs.push_back(mk(v, Shape{2, 3}, state));
      c.ref_inputs.push_back(mk(v, Shape{2, 3}, DType::kFloat64));
    }
    c.run = [id, attrs](const std::vector<Tensor>& x, bool) {
      dispatch(id, x, attrs);
      return x[0];
    };
    return c;
  };
}

FactoryTable build() {
  FactoryTable f;
  using K = Kind;
  Tensor (*add_tt)(const Tensor&, const Tensor&) = &add;
  Tensor (*sub_tt)(const Tensor&, const Tensor&) = &sub;
  Tensor (*mul_tt)(const Tensor&, const Tensor&) = &mul;
  Tensor (*div_tt)(const Tensor&, const Tensor&) = &div;
  Tensor (*pow_tt)(const Tensor&, const Tensor&) = &pow;
  f[OpId::k_add] = binary(add_tt);
  f[OpId::k_sub] = binary(sub_tt, K::kUpper, K::kGeneral);
  f[OpId::k_mul] = binary(mul_tt);
  f[OpId::k_div] = binary(div_tt, K::kGeneral, K::kNonZero);
  f[OpId::k_pow] = binary(pow_tt, K::kPositive, K::kExponent);
  f[OpId::k_maximum] = binary(&maximum);
  f[OpId::k_minimum] = binary(&minimum);
  f[OpId::k_eq] = binary(&eq);
  f[OpId::k_ne] = binary(&ne);
  f[OpId::k_lt] = binary(&lt);
  f[OpId::k_le] = binary(&le);
  f[OpId::k_gt] = binary(&gt);
  f[OpId::k_ge] = binary(&ge);
  f[OpId::k_logical_and] = binary(&logical_and);
  f[OpId::k_logical_or] = binary(&logical_or);

  f[OpId::k_neg] = unary(&neg);
  f[OpId::k_abs] = unary(&abs);
  f[OpId::k_exp] = unary(&exp);
  f[OpId::k_log] = unary(&log, K::kPositive);
  f[OpId::k_sqrt] = unary(&sqrt, K::kPositive);
  f[OpId::k_rsqrt] = unary(&rsqrt, K::kPositive);
  f[OpId::k_sin] = unary(&sin);
  f[OpId::k_cos] = unary(&cos);
  f[OpId::k_tanh] = unary(&tanh);
  f[OpId::k_sigmoid] = unary(&sigmoid);
  f[OpId::k_erf] = unary(&erf);
  f[OpId::k_relu] = unary(&relu);
  f[OpId::k_relu6] = unary(&relu6);
  f[OpId::k_round] = unary(&round);
  f[OpId::k_gelu] = one_input(Shape{2, 3}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return gelu(x[0], false); });
  f[OpId::k_gelu_tanh] = one_input(Shape{2, 3}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return gelu(x[0], true); });
  f[OpId::k_silu] = unary(&silu);
  f[OpId::k_logical_not] = unary(&logical_not);

  f[OpId::k_where] = [](DType t) -> std::optional<OpCase> {
    OpCase c = with_inputs(t, {{Shape{2, 3}, K::kGeneral}, {Shape{3}, K::kGeneral}},
                           [](const std::vector<Tensor>& x, bool) { return where(x[2], x[0], x[1]); });
    Tensor cond = mk(values(6, DType::kBool, K::kGeneral, 99), Shape{2, 3}, DType::kBool);
    c.inputs.push_back(cond);
    c.ref_inputs.push_back(cond);
    return c;
  };
  // The column is the target dtype: float32 values (with fractions) cast to it.
  f[OpId::k_cast] = [](DType t) -> std::optional<OpCase> {
    OpCase c;
    auto v = values(6, DType::kFloat32, t == DType::kUInt8 ? K::kPositive : K::kGeneral, 5);
    for (auto& x : v) x += 0.25;  // a fraction, so that rounding towards zero shows
    c.inputs.push_back(mk(v, Shape{2, 3}, DType::kFloat32));
    c.ref_inputs.push_back(mk(v, Shape{2, 3}, DType::kFloat64));
    c.run = [t](const std::vector<Tensor>& x, bool ref) { return cast(x[0], ref ? DType::kFloat64 : t); };
    return c;
  };
  f[OpId::k_copy] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{3, 2}, K::kGeneral}}, [](const std::vector<Tensor>& x, bool) { return x[0].clone(); },
                       /*strided_first=*/true);
  };

  f[OpId::k_sum] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return sum(x[0], {1}); });
  f[OpId::k_mean] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return mean(x[0], {1}); });
  f[OpId::k_max] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return max(x[0], {1}); });
  f[OpId::k_min] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return min(x[0], {0}); });
  f[OpId::k_var] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return var(x[0], {1}); });
  f[OpId::k_argmax] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return argmax(x[0], 1); });
  f[OpId::k_argmin] = one_input(Shape{3, 4}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return argmin(x[0], 1); });

  f[OpId::k_matmul] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{2, 3}, K::kGeneral}, {Shape{3, 2}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return matmul(x[0], x[1]); });
  };

  f[OpId::k_reshape] = one_input(Shape{2, 3}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return reshape(x[0], {3, 2}); });
  f[OpId::k_permute] = one_input(Shape{2, 3, 2}, K::kGeneral,
                           [](const std::vector<Tensor>& x, bool) { return permute(x[0], {2, 0, 1}); });
  f[OpId::k_slice] = one_input(Shape{4, 3}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return slice(x[0], 0, 1, 4, 2); });
  f[OpId::k_slice_scatter] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{4, 3}, K::kGeneral}, {Shape{2, 3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return slice_scatter(x[0], x[1], 0, 1, 4, 2); },
                       /*strided_first=*/true);
  };
  f[OpId::k_expand] = one_input(Shape{1, 3}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return expand(x[0], {2, 3}); });
  f[OpId::k_concat] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{2, 3}, K::kGeneral}, {Shape{1, 3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return concat({x[0], x[1]}, 0); });
  };

  f[OpId::k_gather] = [](DType t) -> std::optional<OpCase> {
    OpCase c = with_inputs(t, {{Shape{3, 4}, K::kGeneral}},
                           [](const std::vector<Tensor>& x, bool) { return gather(x[0], 1, x[1]); });
    Tensor idx = index_tensor({3, 0, 1, 1, 2, 0}, Shape{3, 2});
    c.inputs.push_back(idx);
    c.ref_inputs.push_back(idx);
    return c;
  };
  f[OpId::k_index_select] = [](DType t) -> std::optional<OpCase> {
    OpCase c = with_inputs(t, {{Shape{4, 3}, K::kGeneral}},
                           [](const std::vector<Tensor>& x, bool) { return index_select(x[0], 0, x[1]); });
    Tensor idx = index_tensor({2, 0}, Shape{2});
    c.inputs.push_back(idx);
    c.ref_inputs.push_back(idx);
    return c;
  };
  f[OpId::k_scatter_add] = [](DType t) -> std::optional<OpCase> {
    // Repeated indices (two 0s in column 0), and src larger than index along axis 1.
    OpCase c = with_inputs(t, {{Shape{3, 4}, K::kGeneral}, {Shape{2, 4}, K::kGeneral}},
                           [](const std::vector<Tensor>& x, bool) { return scatter_add(x[0], 0, x[2], x[1]); });
    Tensor idx = index_tensor({0, 2, 1, 0, 0, 1}, Shape{2, 3});
    c.inputs.push_back(idx);
    c.ref_inputs.push_back(idx);
    return c;
  };
  f[OpId::k_embedding] = [](DType t) -> std::optional<OpCase> {
    OpCase c = with_inputs(t, {{Shape{5, 3}, K::kGeneral}},
                           [](const std::vector<Tensor>& x, bool) { return embedding(x[1], x[0]); });
    Tensor ids = index_tensor({4, 0, 2, 2}, Shape{2, 2});
    c.inputs.push_back(ids);
    c.ref_inputs.push_back(ids);
    return c;
  };

  f[OpId::k_softmax] = one_input(Shape{2, 5}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return softmax(x[0], -1); });
  f[OpId::k_log_softmax] = one_input(Shape{2, 5}, K::kGeneral,
                               [](const std::vector<Tensor>& x, bool) { return log_softmax(x[0], -1); });

  // Creation ops build on the context's device; the reference runs with the CPU as context.
  f[OpId::k_fill] = [](DType t) -> std::optional<OpCase> {
    OpCase c;
    c.run = [t](const std::vector<Tensor>&, bool ref) {
      return full({2, 3}, 2.0, ref ? DType::kFloat64 : t, context().device);
    };
    return c;
  };
  f[OpId::k_arange] = [](DType t) -> std::optional<OpCase> {
    OpCase c;
    c.run = [t](const std::vector<Tensor>&, bool ref) { return arange(0, 6, 1, ref ? DType::kFloat64 : t); };
    return c;
  };
  // NOTE [Random numbers] makes values a function of (seed, index) only: the reference is the
  // CPU in the same dtype, and the device must reproduce it exactly.
  f[OpId::k_random_uniform] = [](DType t) -> std::optional<OpCase> {
    OpCase c;
    c.exact_reference = true;
    c.run = [t](const std::vector<Tensor>&, bool) { return random_uniform({2, 3}, 42, -1, 1, t); };
    return c;
  };
  f[OpId::k_random_normal] = [](DType t) -> std::optional<OpCase> {
    OpCase c;
    c.exact_reference = true;
    c.run = [t](const std::vector<Tensor>&, bool) { return random_normal({2, 3}, 42, 0, 1, t); };
    return c;
  };

  // Convolution and pooling, NCHW; the *_grad ops take an output gradient of the forward shape.
  f[OpId::k_conv2d] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 2, 4, 4}, K::kGeneral}, {Shape{3, 2, 3, 3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return conv2d(x[0], x[1], same_padding()); });
  };
  // Depthwise 3x3 (the fast path of Lite's fused convolution) with a bias and a clamp that cuts.
  f[OpId::k_fused_conv2d] = [](DType t) -> std::optional<OpCase> {
    if (!is_floating(t)) return std::nullopt;
    return with_inputs(t, {{Shape{1, 2, 4, 5}, K::kGeneral}, {Shape{2, 1, 3, 3}, K::kGeneral}, {Shape{2}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         const std::vector<int64_t> one{1, 1};
                         return dispatch1(OpId::k_fused_conv2d, std::span<const Tensor>(x),
                                          Attrs::of(one, one, one, int64_t{2}, -0.5, 0.5, std::string()));
                       });
  };
  f[OpId::k_conv2d_grad_input] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 3, 4, 4}, K::kGeneral}, {Shape{3, 2, 3, 3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         return conv2d_grad_input(x[0], x[1], {1, 2, 4, 4}, same_padding());
                       });
  };
  f[OpId::k_conv2d_grad_weight] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 3, 4, 4}, K::kGeneral}, {Shape{1, 2, 4, 4}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         return conv2d_grad_weight(x[0], x[1], {3, 2, 3, 3}, same_padding());
                       });
  };
  f[OpId::k_max_pool2d] = one_input(Shape{1, 2, 4, 4}, K::kGeneral,
                                    [](const std::vector<Tensor>& x, bool) { return max_pool2d(x[0]); });
  f[OpId::k_avg_pool2d] = one_input(Shape{1, 2, 4, 4}, K::kGeneral,
                                    [](const std::vector<Tensor>& x, bool) { return avg_pool2d(x[0]); });
  f[OpId::k_max_pool2d_grad] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 2, 2, 2}, K::kGeneral}, {Shape{1, 2, 4, 4}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return max_pool2d_grad(x[0], x[1]); });
  };
  f[OpId::k_avg_pool2d_grad] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 2, 2, 2}, K::kGeneral}, {Shape{1, 2, 4, 4}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return avg_pool2d_grad(x[0], x[1]); });
  };
  f[OpId::k_adaptive_avg_pool2d] = one_input(
      Shape{1, 2, 5, 5}, K::kGeneral, [](const std::vector<Tensor>& x, bool) { return adaptive_avg_pool2d(x[0], {2, 3}); });
  f[OpId::k_adaptive_avg_pool2d_grad] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{1, 2, 2, 3}, K::kGeneral}, {Shape{1, 2, 5, 5}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return adaptive_avg_pool2d_grad(x[0], x[1]); });
  };

  // In-place ops: the result is the tensor they wrote.
  f[OpId::k_sgd_update] = update_case(OpId::k_sgd_update, 1, Attrs::of(0.5, 0.9, 0.0, 0.01, false, false));
  f[OpId::k_adam_update] =
      update_case(OpId::k_adam_update, 2, Attrs::of(0.25, 0.9, 0.999, 1e-8, 0.01, int64_t{3}, true));
  f[OpId::k_assign] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{3, 2}, K::kGeneral}, {Shape{3, 2}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         x[0].copy_(x[1]);
                         return x[0];
                       },
                       /*strided_first=*/true);
  };
  // (a * b + a) with b a broadcast row: arithmetic every dtype has, so each column runs.
  f[OpId::k_fused_elementwise] = [](DType t) -> std::optional<OpCase> {
    return with_inputs(t, {{Shape{2, 3}, K::kGeneral}, {Shape{3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         static const Attrs program = Attrs::of(std::string("mul %0 %1; add $0 %0"));
                         return dispatch1(OpId::k_fused_elementwise, std::span<const Tensor>(x), program);
                       });
  };
  // Collectives (NOTE [Collective ops]): the probe runs in one process with no spore::dist
  // group, a group of one, where each is its input (the group's attributes say one process).
  auto collective = [](OpId id, Attrs attrs) {
    return one_input(Shape{2, 3}, K::kGeneral, [id, attrs](const std::vector<Tensor>& x, bool) {
      return dispatch1(id, std::span<const Tensor>(x), attrs);
    });
  };
  f[OpId::k_all_reduce] = collective(OpId::k_all_reduce, Attrs::of(int64_t{0}, false));
  f[OpId::k_broadcast] = collective(OpId::k_broadcast, Attrs::of(int64_t{0}));
  f[OpId::k_all_gather] = collective(OpId::k_all_gather, Attrs::of(int64_t{1}));
  f[OpId::k_reduce_scatter] = collective(OpId::k_reduce_scatter, Attrs::of(int64_t{0}, int64_t{1}));
  f[OpId::k_barrier] = collective(OpId::k_barrier, Attrs());
  // LLM blocks (NOTE [LLM blocks]): positions and inv_freq stay int64 / float32 in the reference
  // too (the gradient check perturbs float64 inputs only, and rope has no gradient for them).
  f[OpId::k_rms_norm] = [](DType t) -> std::optional<OpCase> {
    if (!is_floating(t)) return std::nullopt;
    return with_inputs(t, {{Shape{2, 4}, K::kGeneral}, {Shape{4}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return rms_norm(x[0], x[1], 1e-5); });
  };
  f[OpId::k_rope] = [](DType t) -> std::optional<OpCase> {
    if (!is_floating(t)) return std::nullopt;
    // [B, H, S, D] = [1, 2, 3, 6] with 2 frequencies: features 4 and 5 pass through.
    OpCase c = with_inputs(t, {{Shape{1, 2, 3, 6}, K::kGeneral}}, [](const std::vector<Tensor>& x, bool) {
      return rope(x[0], x[1], x[2], RopeOptions{-2, false, 1.0, false});
    });
    for (const Tensor& extra : {index_tensor({0, 5, 2}, Shape{3}), Tensor::from_vector<float>({1.0f, 0.25f})}) {
      c.inputs.push_back(extra);
      c.ref_inputs.push_back(extra);
    }
    return c;
  };
  f[OpId::k_attention] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32 && t != DType::kFloat64) return std::nullopt;
    // 4 query heads over 2 kv heads; queries at positions 2 and 3 of a 5-row cache.
    return with_inputs(t, {{Shape{1, 4, 2, 3}, K::kGeneral}, {Shape{1, 2, 5, 3}, K::kGeneral}, {Shape{1, 2, 5, 2}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) { return attention(x[0], x[1], x[2], 0.5, 2); });
  };
  f[OpId::k_kv_cache_write] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32 && t != DType::kFloat64) return std::nullopt;
    return with_inputs(t, {{Shape{1, 2, 4, 3}, K::kGeneral}, {Shape{1, 2, 2, 3}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         kv_cache_write(x[0], x[1], 1);
                         return x[0];
                       });
  };
  // q8_0 weights and activations on a grid of 1/64 with a +-127/64 in every block, so both
  // quantise exactly and the float64 reference (dequantise, matmul) is the op's exact answer.
  // float64 activations run the op's float64 product (NOTE [LLM gradients]), which the gradient
  // check differentiates.
  f[OpId::k_matmul_q] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32 && t != DType::kFloat64) return std::nullopt;
    OpCase c;
    const std::vector<double> xv = q8_grid(2 * 32, 3);
    c.inputs.push_back(mk(xv, Shape{2, 32}, t));
    c.ref_inputs.push_back(mk(xv, Shape{2, 32}, DType::kFloat64));
    const Tensor w = q8_0_sample_weight();
    c.inputs.push_back(w);
    c.ref_inputs.push_back(w);
    c.run = [t](const std::vector<Tensor>& x, bool ref) {
      if (!ref || t == DType::kFloat64) return matmul_q(x[0], x[1], "q8_0");
      return matmul(x[0], transpose(q8_0_sample_dequantized(x[1]), 0, 1));
    };
    return c;
  };
  // x on the grid (q - 51) / 51 with -1 and 4 present, so its dynamic uint8 quantization (scale
  // 1/51, zero point 51) is exact; int8 weights with per-column scales of powers of two. The
  // float64 reference is then x times the dequantised weight, the op's exact answer.
  f[OpId::k_dynamic_quant_matmul] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32) return std::nullopt;
    OpCase c;
    std::vector<double> xv(3 * 8);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = (double)((int)((i * 37) % 256) - 51) / 51.0;
    xv[0] = -1.0;
    xv[1] = 4.0;
    std::vector<int8_t> wq(8 * 4);
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = (int8_t)((int)((i * 53) % 255) - 127);
    const Tensor w = Tensor::from_vector<int8_t>(wq, Shape{8, 4});
    const Tensor s = Tensor::from_vector<float>({0.5f, 0.25f, 1.0f, 0.125f}, Shape{4});
    c.inputs = {mk(xv, Shape{3, 8}, t), w, s};
    c.ref_inputs = {mk(xv, Shape{3, 8}, DType::kFloat64), w, s};
    c.run = [](const std::vector<Tensor>& x, bool ref) {
      if (!ref) return dynamic_quant_matmul(x[0], x[1], x[2]);
      return matmul(x[0], mul(x[1].to(DType::kFloat64), x[2].to(DType::kFloat64)));
    };
    return c;
  };
  // uint8 a with a zero point, int8 w with per-column offsets; the reference is the float64
  // product of (a - zero point) and (w + offset), whole numbers well inside float64's 53 bits.
  f[OpId::k_integer_matmul] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kInt32) return std::nullopt;
    OpCase c;
    std::vector<uint8_t> av(3 * 8);
    for (size_t i = 0; i < av.size(); ++i) av[i] = (uint8_t)((i * 97) % 256);
    std::vector<int8_t> wq(8 * 4);
    for (size_t i = 0; i < wq.size(); ++i) wq[i] = (int8_t)((int)((i * 53) % 256) - 128);
    const Tensor a = Tensor::from_vector<uint8_t>(av, Shape{3, 8}), w = Tensor::from_vector<int8_t>(wq, Shape{8, 4});
    const Tensor zp = Tensor::from_vector<int32_t>({77}, Shape{}), off = Tensor::from_vector<int32_t>({128, -3, 0, -128}, Shape{4});
    c.inputs = {a, zp, w, off};
    c.ref_inputs = c.inputs;
    c.run = [](const std::vector<Tensor>& x, bool ref) {
      if (!ref) return integer_matmul(x[0], x[1], x[2], x[3]);
      const auto f64 = [](const Tensor& v) { return v.to(DType::kFloat64); };
      return matmul(sub(f64(x[0]), f64(x[1])), add(f64(x[2]), f64(x[3])));
    };
    return c;
  };
  // dy [2, 3] times the same weight; the reference is dy times the dequantised weight in float64.
  f[OpId::k_matmul_q_grad] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32 && t != DType::kFloat64) return std::nullopt;
    OpCase c = with_inputs(t, {{Shape{2, 3}, K::kGeneral}}, [](const std::vector<Tensor>& x, bool ref) {
      if (ref) return matmul(x[0], q8_0_sample_dequantized(x[1]));
      const Tensor in[] = {x[0], x[1]};
      return dispatch(OpId::k_matmul_q_grad, in, Attrs::of((int64_t)GgmlType::kQ8_0))[0];
    });
    c.inputs.push_back(q8_0_sample_weight());
    c.ref_inputs.push_back(c.inputs.back());
    return c;
  };
  // attention's sample shapes plus o and dO [1, 4, 2, 2], a window of 3 keys and a soft cap of 2;
  // the result is dQ, dK, dV flattened and joined (the matrix compares one tensor).
  f[OpId::k_attention_grad] = [](DType t) -> std::optional<OpCase> {
    if (t != DType::kFloat32 && t != DType::kFloat64) return std::nullopt;
    return with_inputs(t,
                       {{Shape{1, 4, 2, 3}, K::kGeneral}, {Shape{1, 2, 5, 3}, K::kGeneral},
                        {Shape{1, 2, 5, 2}, K::kGeneral}, {Shape{1, 4, 2, 2}, K::kGeneral},
                        {Shape{1, 4, 2, 2}, K::kGeneral}},
                       [](const std::vector<Tensor>& x, bool) {
                         const TensorList g = dispatch(OpId::k_attention_grad, std::span<const Tensor>(x),
                                                       Attrs::of(0.5, int64_t{2}, int64_t{3}, 2.0));
                         return concat({reshape(g[0], {-1}), reshape(g[1], {-1}), reshape(g[2], {-1})});
                       });
  };
  return f;
}

const FactoryTable& table() {
  static const auto* t = new FactoryTable(build());
  return *t;
}
}  // namespace

const OpFactory* op_factory(OpId id) {
  if ((size_t)id >= (size_t)kNumOps) return nullptr;
  const OpFactory& f = table().at[(size_t)id];
  return f ? &f : nullptr;
}

const OpFactory* find_op_factory(std::string_view op) {
  const OpDef* def = find_op(op);
  return def ? op_factory(def->id) : nullptr;
}

}  // namespace spore::probe
