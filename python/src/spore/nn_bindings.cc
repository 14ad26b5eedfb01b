// The C++ cells, Parameter and the optimizers (NOTE [Python modules]). Python's nn.Cell is a
// Python class (python/spore/nn/cell.py) so that users subclass it as in MindSpore; the built-in
// layers are Python cells that hold one of these C++ cells and delegate to it.
#include <pybind11/stl.h>

#include "common/convert.h"
#include "spore/bindings.h"
#include "spore/nn/activation.h"
#include "spore/nn/conv.h"
#include "spore/nn/dense.h"
#include "spore/nn/losses.h"
#include "spore/nn/normalization.h"
#include "spore/ops.h"
#include "spore/optim.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

std::vector<Parameter> handles(const std::vector<PyParameter*>& ps) {
  std::vector<Parameter> out;
  out.reserve(ps.size());
  for (PyParameter* p : ps) {
    if (!p) throw Error(ErrorCode::kValue, "optimizer: None in the parameter list");
    out.push_back(p->handle);
  }
  return out;
}

py::list named(const nn::Cell& c) {
  py::list out;
  for (auto& [name, p] : c.named_parameters()) out.append(py::make_tuple(name, PyParameter(p)));
  return out;
}

}  // namespace

void bind_nn(py::module_& m) {
  // ---- Parameter ----
  py::class_<PyParameter, Tensor> p(m, "Parameter", py::module_local(),
                                    "A trainable tensor shared by a network, its optimizer and value_and_grad");
  p.def(py::init([](py::object data, py::object name, bool requires_grad) {
          Tensor t = tensor_from_object(data, std::nullopt, false, "Parameter");
          // Own the memory: an optimizer updates a parameter in place, which must not write
          // into the caller's NumPy array (or fail on a read-only one).
          if (t.storage()->external() || !t.is_contiguous()) t = t.clone();
          std::string n = name.is_none() ? std::string("Parameter") : name.cast<std::string>();
          return PyParameter(Parameter(t, n, requires_grad));
        }),
        py::arg("default_input"), py::arg("name") = py::none(), py::arg("requires_grad") = true);
  p.def_property("name", [](const PyParameter& x) { return x.handle.name(); },
                 [](PyParameter& x, const std::string& n) { x.handle.set_name(n); });
  p.def_property("requires_grad", [](const PyParameter& x) { return x.handle.requires_grad(); },
                 [](PyParameter& x, bool on) { x.handle.set_requires_grad(on); });
  p.def_property_readonly("data", [](const PyParameter& x) { return x.handle.value(); });
  p.def("value", [](const PyParameter& x) { return x.handle.value(); });
  // Copies the values in: the value stays the same tensor, so every holder sees the new values.
  p.def("set_data", [](PyParameter& x, py::object data) {
    const Tensor& cur = x.handle.value();
    Tensor src = tensor_from_object(data, cur.dtype(), false, "Parameter.set_data");
    if (src.shape() != cur.shape())
      throw Error(ErrorCode::kShape, "Parameter '" + x.handle.name() + "'.set_data: shape " + src.shape().str() +
                                         " does not match the parameter's " + cur.shape().str());
    cur.copy_(src);
    static_cast<Tensor&>(x) = cur;
    return &x;
  }, py::return_value_policy::reference);
  p.def("_same_as", [](const PyParameter& a, const PyParameter& b) { return a.handle.same_as(b.handle); });
  p.def("_key", [](const PyParameter& a) { return (size_t)a.handle.value().impl(); });

  // ---- C++ cells ----
  py::class_<nn::Cell, std::shared_ptr<nn::Cell>> cell(m, "_NativeCell", py::module_local());
  cell.def("__call__", [](nn::Cell& c, const Tensor& x) { return c(x); });
  cell.def("named_parameters", &named);
  cell.def("set_train", [](nn::Cell& c, bool mode) { c.set_train(mode); });
  cell.def("to_float", [](nn::Cell& c, DType d) { c.to_float(d); });
  cell.def_property_readonly("training", &nn::Cell::training);
  cell.def_property_readonly("cell_name", &nn::Cell::name);

  py::class_<nn::Dense, nn::Cell, std::shared_ptr<nn::Dense>>(m, "_Dense", py::module_local())
      .def(py::init([](int64_t in, int64_t out, bool bias, const std::string& act, uint64_t seed, DType d) {
             return std::make_shared<nn::Dense>(in, out, bias, act, seed, d);
           }));
  py::class_<nn::Embedding, nn::Cell, std::shared_ptr<nn::Embedding>>(m, "_Embedding", py::module_local())
      .def(py::init<int64_t, int64_t, uint64_t, DType>());
  py::class_<nn::Conv2d, nn::Cell, std::shared_ptr<nn::Conv2d>>(m, "_Conv2d", py::module_local())
      .def(py::init([](int64_t in, int64_t out, std::vector<int64_t> k, std::vector<int64_t> stride,
                       const std::string& pad_mode, std::vector<int64_t> padding, std::vector<int64_t> dilation,
                       int64_t groups, bool has_bias, uint64_t seed, DType d) {
        nn::Conv2dConfig c;
        c.stride = stride;
        c.pad_mode = pad_mode;
        c.padding = padding;
        c.dilation = dilation;
        c.groups = groups;
        c.has_bias = has_bias;
        c.seed = seed;
        c.dtype = d;
        return std::make_shared<nn::Conv2d>(in, out, k, c);
      }));
  py::class_<nn::BatchNorm1d, nn::Cell, std::shared_ptr<nn::BatchNorm1d>>(m, "_BatchNorm1d", py::module_local())
      .def(py::init<int64_t, double, double, bool, DType>());
  py::class_<nn::BatchNorm2d, nn::Cell, std::shared_ptr<nn::BatchNorm2d>>(m, "_BatchNorm2d", py::module_local())
      .def(py::init<int64_t, double, double, bool, DType>());
  py::class_<nn::LayerNorm, nn::Cell, std::shared_ptr<nn::LayerNorm>>(m, "_LayerNorm", py::module_local())
      .def(py::init<std::vector<int64_t>, double, bool, DType>());
  py::class_<nn::Dropout, nn::Cell, std::shared_ptr<nn::Dropout>>(m, "_Dropout", py::module_local())
      .def(py::init<double, uint64_t>());
  py::class_<nn::MaxPool2d, nn::Cell, std::shared_ptr<nn::MaxPool2d>>(m, "_MaxPool2d", py::module_local())
      .def(py::init<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>, bool>());
  py::class_<nn::AvgPool2d, nn::Cell, std::shared_ptr<nn::AvgPool2d>>(m, "_AvgPool2d", py::module_local())
      .def(py::init<std::vector<int64_t>, std::vector<int64_t>, std::vector<int64_t>, bool>());
  py::class_<nn::AdaptiveAvgPool2d, nn::Cell, std::shared_ptr<nn::AdaptiveAvgPool2d>>(m, "_AdaptiveAvgPool2d",
                                                                                     py::module_local())
      .def(py::init<std::vector<int64_t>>());
  // Stateless activations, by name (make_activation's names).
  m.def("_activation", [](const std::string& name) { return nn::make_activation(name); });
  m.def("_flatten_cell", [](int64_t s, int64_t e) { return std::static_pointer_cast<nn::Cell>(std::make_shared<nn::Flatten>(s, e)); });
  m.def("_softmax_cell", [](int64_t a) { return std::static_pointer_cast<nn::Cell>(std::make_shared<nn::Softmax>(a)); });
  m.def("_gelu_cell", [](bool approx) { return std::static_pointer_cast<nn::Cell>(std::make_shared<nn::GELU>(approx)); });

  // ---- optimizers: called as optimizer(grads) with gradients in the order of their parameters ----
  py::class_<optim::Optimizer, std::shared_ptr<optim::Optimizer>> opt(m, "_Optimizer", py::module_local());
  opt.def("__call__", [](optim::Optimizer& o, const std::vector<Tensor>& grads) {
    o.step(grads);
    return true;
  });
  opt.def_property_readonly("steps_taken", &optim::Optimizer::steps_taken);
  opt.def_property_readonly("current_lr", &optim::Optimizer::current_lr);
  opt.def_property_readonly("parameters", [](const optim::Optimizer& o) {
    py::list out;
    for (const Parameter& p : o.parameters()) out.append(PyParameter(p));
    return out;
  });
  py::class_<optim::Adam, optim::Optimizer, std::shared_ptr<optim::Adam>>(m, "_Adam", py::module_local())
      .def(py::init([](const std::vector<PyParameter*>& ps, double lr, double b1, double b2, double eps, double wd) {
        return std::make_shared<optim::Adam>(handles(ps), lr, b1, b2, eps, wd);
      }));
  py::class_<optim::AdamW, optim::Optimizer, std::shared_ptr<optim::AdamW>>(m, "_AdamW", py::module_local())
      .def(py::init([](const std::vector<PyParameter*>& ps, double lr, double b1, double b2, double eps, double wd) {
        return std::make_shared<optim::AdamW>(handles(ps), lr, b1, b2, eps, wd);
      }));
  py::class_<optim::SGD, optim::Optimizer, std::shared_ptr<optim::SGD>>(m, "_SGD", py::module_local())
      .def(py::init([](const std::vector<PyParameter*>& ps, double lr, double momentum, double wd, bool nesterov,
                       double dampening) {
        return std::make_shared<optim::SGD>(handles(ps), lr, momentum, wd, nesterov, dampening);
      }));
  m.def("_clip_grad_norm", [](std::vector<Tensor> grads, double max_norm) {
    double n = optim::clip_grad_norm(grads, max_norm);
    return py::make_tuple(grads, n);
  });
}

}  // namespace spore::py_bind
