// The pieces of spore._spore, one function per area (NOTE [Python modules]).
#pragma once
#include <pybind11/pybind11.h>

#include <memory>

#include "spore/parameter.h"
#include "spore/tensor.h"

namespace spore::py_bind {

// A Parameter as Python sees it: a Tensor (the parameter's current value, so that ops take it
// as they take any tensor) plus the shared handle that optimizers and value_and_grad update.
// Optimizers write in place, so the value stays the same TensorImpl; set_data keeps it so too.
struct PyParameter : Tensor {
  Parameter handle;
  explicit PyParameter(Parameter p) : Tensor(p.value()), handle(std::move(p)) {}
};

// A Python object that may be dropped by any thread: its reference is released with the GIL held.
struct PyRef {
  pybind11::object obj;
  explicit PyRef(pybind11::object o) : obj(std::move(o)) {}
  ~PyRef() {
    if (!Py_IsInitialized()) {
      obj.release();
      return;
    }
    pybind11::gil_scoped_acquire gil;
    obj = pybind11::object();
  }
};
using PyRefPtr = std::shared_ptr<PyRef>;

void bind_tensor(pybind11::module_& m);
void bind_ops(pybind11::module_& m);
void bind_nn(pybind11::module_& m);
void bind_autograd(pybind11::module_& m);
void bind_data(pybind11::module_& m);
void bind_io(pybind11::module_& m);

}  // namespace spore::py_bind
