// NumPy <-> spore::Tensor, shared by both modules (NOTE [Python modules], NOTE [NumPy sharing]).
//
// NOTE [NumPy sharing]
// Tensor(np_array) shares the array's memory when the array is C-contiguous, native-endian and of
// a dtype Spore has (bool, int8, uint8, int32, int64, float16, float32, float64, and bfloat16 from
// ml_dtypes): the tensor's storage is external (NOTE [External storage]) and holds a reference to
// the array, so the memory lives as long as either; a read-only array gives a read-only tensor
// (an optimizer refuses to update it). Anything else (another dtype asked for, a strided or
// byte-swapped array) is copied. asnumpy() returns a view of the tensor's memory whose base keeps
// the storage alive; a read-only storage gives a read-only array. bfloat16 has no NumPy dtype:
// with ml_dtypes installed asnumpy() returns an ml_dtypes.bfloat16 view, without it a float32
// copy (the values are exact: bfloat16 is float32 with a shorter mantissa).
#pragma once
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <optional>

#include "spore/tensor.h"

namespace spore::py_bind {

// Spore's dtype for a NumPy dtype; nullopt when Spore has none (complex, uint16, strings, ...).
std::optional<DType> dtype_from_numpy(const pybind11::dtype& dt);
// The NumPy dtype for a Spore dtype (bfloat16: ml_dtypes' when importable, else nullopt).
std::optional<pybind11::dtype> numpy_dtype(DType t);

// An array as a tensor, sharing its memory where NOTE [NumPy sharing] allows (`share` false:
// always a copy). `dtype` given and different from the array's: converted (a copy).
Tensor tensor_from_array(const pybind11::array& a, std::optional<DType> dtype, bool share);
// Python data (a Tensor, a NumPy array or scalar, a list, a Python number or bool) as a tensor.
// Lists and Python numbers get MindSpore's default dtypes: float -> float32, int -> int64,
// bool -> bool, unless `dtype` is given. `what` names the value in errors.
Tensor tensor_from_object(pybind11::handle data, std::optional<DType> dtype, bool share, const char* what);
// A NumPy view of the tensor's memory (NOTE [NumPy sharing]); device tensors are copied to the host.
pybind11::array tensor_to_array(const Tensor& t);

}  // namespace spore::py_bind
