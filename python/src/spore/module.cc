// spore._spore: the framework as a Python extension (NOTE [Python modules]).
#include <pybind11/pybind11.h>

#include "common/errors.h"
#include "nlp/nlp_bindings.h"
#include "spore/bindings.h"

PYBIND11_MODULE(_spore, m) {
  m.doc() = "Spore's framework (tensors, ops, cells, autograd, optimizers, datasets, checkpoints, jit, export)";
  spore::py_bind::register_errors(m);
  spore::py_bind::bind_tensor(m);
  spore::py_bind::bind_ops(m);
  spore::py_bind::bind_nn(m);
  spore::py_bind::bind_autograd(m);
  spore::py_bind::bind_data(m);
  spore::py_bind::bind_io(m);
  spore::py_bind::bind_dist(m);
  spore::py_bind::bind_nlp(m);
}
