// NOTE [Core hooks]: the few things Tensor's methods need from the op layer (a contiguous copy,
// a cast, a write into an existing tensor), as function pointers the core owns and the op layer
// fills when it is linked (src/ops/tensor_hooks.cc). The core never names an op or calls into
// src/ops/, so it can be built and reasoned about below the registry (docs/design.md).
#pragma once
#include "spore/dtype.h"

namespace spore {
class Tensor;

struct TensorOpHooks {
  Tensor (*copy)(const Tensor& src) = nullptr;                 // a new contiguous copy
  Tensor (*cast)(const Tensor& src, DType dtype) = nullptr;    // a new tensor in `dtype`
  void (*assign)(const Tensor& dst, const Tensor& src) = nullptr;  // dst[...] = src (broadcast, cast, move)
};

// The op layer installs its hooks once, before main (and again when the registry is built).
void set_tensor_op_hooks(const TensorOpHooks& hooks);
const TensorOpHooks& tensor_op_hooks();

}  // namespace spore
