// Public API of the creation family (include/spore/ops.h).
//
// The creation ops have no tensor inputs, so the dispatcher creates their outputs on the
// context's default device. An explicit device is honoured by moving the result there (one
// transfer, only when it differs from the default): changing the default device around the call
// would be simpler to write but races with other threads, since the context is process-wide.
#include "spore/context.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

Tensor full(const std::vector<int64_t>& shape, double value, DType dtype) {
  return dispatch1(OpId::k_fill, std::span<const Tensor>{}, Attrs{shape, value, dtype});
}

Tensor full(const std::vector<int64_t>& shape, double value, DType dtype, Device device) {
  return full(shape, value, dtype).to(device);
}

Tensor zeros(const std::vector<int64_t>& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const std::vector<int64_t>& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor zeros_like(const Tensor& x) { return full(x.shape().to_vector(), 0.0, x.dtype(), x.device()); }
Tensor ones_like(const Tensor& x) { return full(x.shape().to_vector(), 1.0, x.dtype(), x.device()); }

Tensor arange(double start, double end, double step, DType dtype) {
  return dispatch1(OpId::k_arange, std::span<const Tensor>{}, Attrs{start, end, step, dtype});
}

// The seed travels as an int64 attribute; the bits are kept (seeds >= 2^63 map to negatives and
// back), so every uint64 seed is distinct.
Tensor random_uniform(const std::vector<int64_t>& shape, uint64_t seed, double low, double high,
                      DType dtype) {
  return dispatch1(OpId::k_random_uniform, std::span<const Tensor>{},
                   Attrs{shape, (int64_t)seed, low, high, dtype});
}

Tensor random_normal(const std::vector<int64_t>& shape, uint64_t seed, double mean, double stddev,
                     DType dtype) {
  return dispatch1(OpId::k_random_normal, std::span<const Tensor>{},
                   Attrs{shape, (int64_t)seed, mean, stddev, dtype});
}

}  // namespace spore
