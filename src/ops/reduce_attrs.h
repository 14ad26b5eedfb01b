// Attribute conventions of the reduce family shared by the op definitions, the API and the
// kernels of every backend.
#pragma once
#include <cstdint>
#include <limits>

namespace spore::ops {

// argmax/argmin take one int axis; this value of it means "the flattened tensor" (the API's
// std::nullopt). No real axis can take it: axes are bounded by kMaxDims.
inline constexpr int64_t kArgAxisAll = std::numeric_limits<int64_t>::min();

}  // namespace spore::ops
