// Text for error messages of the op definitions, one spelling for every family: int lists as
// "[2, 3]" (the way Shape::str prints shapes) and tensors as "float32[2, 3]".
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "spore/tensor.h"

namespace spore::ops {

std::string ints_str(const std::vector<int64_t>& values);
std::string describe(const Tensor& t);

}  // namespace spore::ops
