#include "spore/nn/init.h"

#include <cmath>

#include "spore/ops.h"

namespace spore::nn::init {

namespace {

int64_t numel_of(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

void check_floating(DType dtype, const char* who) {
  if (!is_floating(dtype))
    throw Error(ErrorCode::kDType, std::string("init::") + who + ": dtype " + dtype_name(dtype) +
                                       " is not floating; initializers fill float16, bfloat16, float32 or "
                                       "float64 parameters");
}

// U(-bound, bound); an empty tensor or a zero bound gives zeros (random_uniform needs low < high).
Tensor symmetric_uniform(const std::vector<int64_t>& shape, uint64_t seed, double bound, DType dtype,
                         const char* who) {
  check_floating(dtype, who);
  if (!std::isfinite(bound))
    throw Error(ErrorCode::kValue, std::string("init::") + who + ": the bound " + std::to_string(bound) +
                                       " is not finite (an axis of extent 0 makes the fan 0)");
  if (numel_of(shape) == 0 || bound == 0) return spore::zeros(shape, dtype);
  return random_uniform(shape, seed, -bound, bound, dtype);
}

Tensor normal_std(const std::vector<int64_t>& shape, uint64_t seed, double std, DType dtype, const char* who) {
  check_floating(dtype, who);
  if (!std::isfinite(std))
    throw Error(ErrorCode::kValue, std::string("init::") + who + ": the standard deviation " +
                                       std::to_string(std) + " is not finite (an axis of extent 0 makes the fan 0)");
  return random_normal(shape, seed, 0, std, dtype);
}

double he_std(const std::vector<int64_t>& shape, double a, const std::string& mode, const std::string& nonlinearity,
              const char* who) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(shape);
  int64_t fan;
  if (mode == "fan_in") fan = fan_in;
  else if (mode == "fan_out") fan = fan_out;
  else
    throw Error(ErrorCode::kValue, std::string("init::") + who + ": mode '" + mode +
                                       "' is neither 'fan_in' nor 'fan_out'");
  return calculate_gain(nonlinearity, a) / std::sqrt((double)fan);
}

}  // namespace

std::pair<int64_t, int64_t> fan_in_and_fan_out(const std::vector<int64_t>& shape) {
  if (shape.size() < 2)
    throw Error(ErrorCode::kShape, "init: fan in and fan out need a weight with at least 2 axes, got shape " +
                                       Shape(shape).str() + "; use uniform/normal for biases and vectors");
  int64_t receptive = 1;
  for (size_t i = 2; i < shape.size(); ++i) receptive *= shape[i];
  return {shape[1] * receptive, shape[0] * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "identity" || nonlinearity == "sigmoid" ||
      nonlinearity.rfind("conv", 0) == 0)
    return 1;
  if (nonlinearity == "tanh") return 5.0 / 3;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4;
  throw Error(ErrorCode::kValue, "init::calculate_gain: unknown nonlinearity '" + nonlinearity +
                                     "' (known: linear, conv1d/2d/3d, sigmoid, tanh, relu, leaky_relu, selu)");
}

uint64_t derive_seed(uint64_t seed, uint64_t k) {
  uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

Tensor zeros(const std::vector<int64_t>& shape, DType dtype) { return spore::zeros(shape, dtype); }
Tensor ones(const std::vector<int64_t>& shape, DType dtype) { return spore::ones(shape, dtype); }
Tensor constant(const std::vector<int64_t>& shape, double value, DType dtype) { return full(shape, value, dtype); }

Tensor uniform(const std::vector<int64_t>& shape, uint64_t seed, double low, double high, DType dtype) {
  check_floating(dtype, "uniform");
  if (!(low < high))
    throw Error(ErrorCode::kValue, "init::uniform: low (" + std::to_string(low) + ") must be < high (" +
                                       std::to_string(high) + ")");
  return random_uniform(shape, seed, low, high, dtype);
}

Tensor normal(const std::vector<int64_t>& shape, uint64_t seed, double mean, double std, DType dtype) {
  check_floating(dtype, "normal");
  if (!(std >= 0))
    throw Error(ErrorCode::kValue, "init::normal: std must be >= 0, got " + std::to_string(std));
  return random_normal(shape, seed, mean, std, dtype);
}

Tensor xavier_uniform(const std::vector<int64_t>& shape, uint64_t seed, double gain, DType dtype) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(shape);
  return symmetric_uniform(shape, seed, gain * std::sqrt(6.0 / (double)(fan_in + fan_out)), dtype,
                           "xavier_uniform");
}

Tensor xavier_normal(const std::vector<int64_t>& shape, uint64_t seed, double gain, DType dtype) {
  auto [fan_in, fan_out] = fan_in_and_fan_out(shape);
  return normal_std(shape, seed, gain * std::sqrt(2.0 / (double)(fan_in + fan_out)), dtype, "xavier_normal");
}

Tensor he_uniform(const std::vector<int64_t>& shape, uint64_t seed, double a, const std::string& mode,
                  const std::string& nonlinearity, DType dtype) {
  const double std = he_std(shape, a, mode, nonlinearity, "he_uniform");
  return symmetric_uniform(shape, seed, std::sqrt(3.0) * std, dtype, "he_uniform");
}

Tensor he_normal(const std::vector<int64_t>& shape, uint64_t seed, double a, const std::string& mode,
                 const std::string& nonlinearity, DType dtype) {
  return normal_std(shape, seed, he_std(shape, a, mode, nonlinearity, "he_normal"), dtype, "he_normal");
}

}  // namespace spore::nn::init
