// The pieces of spore._spore, one function per area (NOTE [Python modules]).
#pragma once
#include <pybind11/pybind11.h>

#include <pybind11/stl.h>  // GradFn::call returns vectors of tensors: the same casters in every file

#include <functional>
#include <memory>
#include <vector>

#include "spore/autograd.h"
#include "spore/data.h"
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

// A value_and_grad function as Python holds it (spore._spore._GradFn): called with the watched
// tensors, returns (value, input grads, weight grads).
struct GradFn {
  std::function<ValueAndGrad(const std::vector<Tensor>&)> fn;
  pybind11::tuple call(const std::vector<Tensor>& inputs) {
    ValueAndGrad r = fn(inputs);
    return pybind11::make_tuple(r.value, r.input_grads, r.weight_grads);
  }
};

// A Python loss function (list of tensors -> one Tensor) as a TensorFn: called with the GIL,
// Python errors carried by ticket (NOTE [Python callbacks]).
TensorFn python_loss_fn(pybind11::function f);

void bind_tensor(pybind11::module_& m);
void bind_ops(pybind11::module_& m);
void bind_nn(pybind11::module_& m);
void bind_autograd(pybind11::module_& m);
void bind_data(pybind11::module_& m);
void bind_io(pybind11::module_& m);
// spore._spore.dist: collectives and data parallelism (python/src/dist/dist_bindings.cc where
// spore_dist is built, else python/src/dist/dist_missing.cc, whose calls name the missing MPI).
void bind_dist(pybind11::module_& m);

// A Python random-access source (source[i] for any row index) as the pipeline's RandomAccessFn:
// rows converted and Python errors carried as data_bindings.cc does for GeneratorDataset.
data::RandomAccessFn python_random_access(pybind11::object source);

}  // namespace spore::py_bind
