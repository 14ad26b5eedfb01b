// value_and_grad and jit over Python functions (NOTE [Python modules]). The Python function is
// called back from C++ with the GIL held; it calls bound ops, which dispatch through the same
// observers (the gradient tape, the graph tracer) as C++ code does, so a Python function is
// differentiated and traced exactly as a C++ one. Python exceptions inside it cross the C++
// frames by ticket (NOTE [Python callbacks]).
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "common/errors.h"
#include "spore/autograd.h"
#include "spore/bindings.h"
#include "spore/jit.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

Tensor one_tensor(const py::object& r, const char* who) {
  if (!py::isinstance<Tensor>(r))
    throw Error(ErrorCode::kValue, std::string(who) + ": the function must return one Tensor, got " +
                                       std::string(py::str(py::type::handle_of(r).attr("__name__"))) +
                                       " (with several results, use has_aux=True)");
  return r.cast<Tensor>();
}

std::vector<Tensor> tensors_of(const py::object& r, const char* who) {
  if (py::isinstance<Tensor>(r)) return {r.cast<Tensor>()};
  std::vector<Tensor> out;
  if (py::isinstance<py::tuple>(r) || py::isinstance<py::list>(r)) {
    for (auto h : r) {
      if (!py::isinstance<Tensor>(h))
        throw Error(ErrorCode::kValue, std::string(who) + ": every result must be a Tensor, got " +
                                           std::string(py::str(py::type::handle_of(h).attr("__name__"))));
      out.push_back(h.cast<Tensor>());
    }
    return out;
  }
  throw Error(ErrorCode::kValue, std::string(who) + ": the function must return a Tensor or a tuple of Tensors, got " +
                                     std::string(py::str(py::type::handle_of(r).attr("__name__"))));
}

AttrValue static_of(py::handle h) {
  if (PyBool_Check(h.ptr())) return h.cast<bool>();
  if (PyLong_Check(h.ptr())) return h.cast<int64_t>();
  if (PyFloat_Check(h.ptr())) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return h.cast<std::string>();
  throw Error(ErrorCode::kValue, "jit: a non-tensor argument must be a bool, int, float or str (it is part of the "
                                 "compiled graph's key), got " +
                                     std::string(py::str(py::type::handle_of(h).attr("__name__"))));
}

py::object py_static(const AttrValue& v) {
  return std::visit([](const auto& x) -> py::object { return py::cast(x); }, v);
}

struct PyJit {
  JitFunction fn;
  py::list call(const std::vector<Tensor>& inputs, py::list statics) {
    StaticArgs s;
    for (auto h : statics) s.push_back(static_of(h));
    py::list out;
    for (Tensor& t : fn(inputs, s)) out.append(std::move(t));
    return out;
  }
};

}  // namespace

TensorFn python_loss_fn(py::function f) {
  auto ref = std::make_shared<PyRef>(std::move(f));
  return [ref](const std::vector<Tensor>& in) -> Tensor {
    py::gil_scoped_acquire gil;
    try {
      return one_tensor(ref->obj(py::cast(in)), "value_and_grad");
    } catch (py::error_already_set& e) {
      throw_from_python_error(e);
    }
  };
}

void bind_autograd(py::module_& m) {
  py::class_<GradFn>(m, "_GradFn", py::module_local()).def("__call__", &GradFn::call);
  // fn(list of tensors) -> Tensor; positions: the inputs to differentiate; weights: Parameters.
  m.def("_value_and_grad", [](py::function f, std::vector<int> positions, std::vector<PyParameter*> weights) {
    GradPosition gp = GradPosition::none();
    gp.positions = positions;
    std::vector<Parameter> ws;
    for (PyParameter* p : weights) ws.push_back(p->handle);
    return GradFn{value_and_grad(python_loss_fn(std::move(f)), gp, ws)};
  });

  py::class_<PyJit>(m, "_JitFn", py::module_local())
      .def("__call__", &PyJit::call)
      .def_property_readonly("calls", [](const PyJit& j) { return j.fn.stats().calls; })
      .def_property_readonly("hits", [](const PyJit& j) { return j.fn.stats().hits; })
      .def_property_readonly("misses", [](const PyJit& j) { return j.fn.stats().misses; })
      .def_property_readonly("nodes_compiled", [](const PyJit& j) { return j.fn.stats().nodes_compiled; })
      .def("last_graph", [](const PyJit& j) {
        const graph::Graph* g = j.fn.last_graph();
        return g ? graph::dump(*g) : std::string();
      });
  // fn(list of tensors, list of statics) -> Tensor or tuple of Tensors, traced on the first call
  // with each signature.
  m.def("_jit", [](py::function f, const std::string& name) {
    auto ref = std::make_shared<PyRef>(f);
    TensorsStaticFn fn = [ref](const std::vector<Tensor>& in, const StaticArgs& statics) {
      py::gil_scoped_acquire gil;
      try {
        py::list s;
        for (const AttrValue& v : statics) s.append(py_static(v));
        return tensors_of(ref->obj(py::cast(in), s), "jit");
      } catch (py::error_already_set& e) {
        throw_from_python_error(e);
      }
    };
    JitOptions o;
    o.name = name;
    return PyJit{jit(fn, o)};
  });
  m.def("_is_tracing", &graph::is_tracing);

  struct NoGrad {
    std::unique_ptr<NoGradGuard> g;
  };
  py::class_<NoGrad>(m, "_NoGrad", py::module_local())
      .def(py::init<>())
      .def("__enter__", [](NoGrad& n) { n.g = std::make_unique<NoGradGuard>(); })
      .def("__exit__", [](NoGrad& n, py::args) { n.g.reset(); });
}

}  // namespace spore::py_bind
