// Parameter initializers (spore::nn::init). Every random initializer takes an explicit seed and
// draws through spore::random_uniform / random_normal (Philox, NOTE [Random numbers]), so a
// network built with the same seeds has bit-identical weights on every run and thread count.
// Formulas and names follow PyTorch's torch.nn.init (MindSpore's XavierUniform, HeUniform, ...
// compute the same bounds).
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spore/tensor.h"

namespace spore::nn::init {

// (fan_in, fan_out) of a weight: shape[1] and shape[0] times the receptive field (the product of
// the remaining axes). Needs at least 2 axes (kShape otherwise).
std::pair<int64_t, int64_t> fan_in_and_fan_out(const std::vector<int64_t>& shape);

// Recommended gain for a nonlinearity: "linear"/"conv*"/"sigmoid" 1, "tanh" 5/3, "relu" sqrt(2),
// "leaky_relu" sqrt(2 / (1 + param^2)), "selu" 3/4. Unknown names are kValue.
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

// A seed for the k-th tensor of a cell built with `seed` (SplitMix64 of both): one seed per cell
// gives independent streams for its weight, bias, ...
uint64_t derive_seed(uint64_t seed, uint64_t k);

Tensor zeros(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor ones(const std::vector<int64_t>& shape, DType dtype = DType::kFloat32);
Tensor constant(const std::vector<int64_t>& shape, double value, DType dtype = DType::kFloat32);
// U(low, high) and N(mean, std^2).
Tensor uniform(const std::vector<int64_t>& shape, uint64_t seed, double low = 0, double high = 1,
               DType dtype = DType::kFloat32);
Tensor normal(const std::vector<int64_t>& shape, uint64_t seed, double mean = 0, double std = 1,
              DType dtype = DType::kFloat32);
// Glorot: U(-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)); N(0, gain^2 * 2 / (fan_in + fan_out)).
Tensor xavier_uniform(const std::vector<int64_t>& shape, uint64_t seed, double gain = 1,
                      DType dtype = DType::kFloat32);
Tensor xavier_normal(const std::vector<int64_t>& shape, uint64_t seed, double gain = 1,
                     DType dtype = DType::kFloat32);
// He / Kaiming: std = gain(nonlinearity, a) / sqrt(fan), fan = fan_in ("fan_in") or fan_out
// ("fan_out"); uniform bound = sqrt(3) * std.
Tensor he_uniform(const std::vector<int64_t>& shape, uint64_t seed, double a = 0,
                  const std::string& mode = "fan_in", const std::string& nonlinearity = "leaky_relu",
                  DType dtype = DType::kFloat32);
Tensor he_normal(const std::vector<int64_t>& shape, uint64_t seed, double a = 0,
                 const std::string& mode = "fan_in", const std::string& nonlinearity = "leaky_relu",
                 DType dtype = DType::kFloat32);
inline Tensor kaiming_uniform(const std::vector<int64_t>& shape, uint64_t seed, double a = 0,
                              const std::string& mode = "fan_in",
                              const std::string& nonlinearity = "leaky_relu", DType dtype = DType::kFloat32) {
  return he_uniform(shape, seed, a, mode, nonlinearity, dtype);
}
inline Tensor kaiming_normal(const std::vector<int64_t>& shape, uint64_t seed, double a = 0,
                             const std::string& mode = "fan_in",
                             const std::string& nonlinearity = "leaky_relu", DType dtype = DType::kFloat32) {
  return he_normal(shape, seed, a, mode, nonlinearity, dtype);
}

}  // namespace spore::nn::init
