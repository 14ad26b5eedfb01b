// Byte-level tensor helpers for the pipeline. Everything in a pipeline lives in host memory, so
// batching and file writing copy bytes directly instead of going through op kernels.
#pragma once
#include <cstdint>

#include "spore/tensor.h"

namespace spore::data::detail {

// The tensor on the CPU (itself when it already is).
Tensor to_host(const Tensor& t);
// Copies a CPU tensor's elements in row-major order to dst (nbytes() bytes), following its
// strides and offset.
void copy_elements(const Tensor& t, void* dst);
// Slice i along axis 0, as a view (no copy).
Tensor row_view(const Tensor& t, int64_t i);
// Shape of `rows` stacked along a new leading axis.
Shape stacked_shape(int64_t rows, const Shape& row_shape);

}  // namespace spore::data::detail
