// spore.dataset over the C++ pipeline (spore::data, NOTE [Pipeline determinism], NOTE [Pipeline
// errors]): Python generators and random-access sources, map with Python callables (ordered,
// num_parallel_workers threads that each take the GIL to call Python), shuffle, batch, repeat.
// Iterating releases the GIL, so the map workers can run the Python functions meanwhile.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "common/convert.h"
#include "common/errors.h"
#include "spore/bindings.h"
#include "spore/data.h"

#include <algorithm>
#include <mutex>

namespace py = pybind11;

namespace spore::py_bind {
namespace {

// One column's value as a pipeline stage produced it. A Python int/float/bool has no dtype: it is
// the chapter's "untyped scalar" and is refused with MindSpore's words and the fix.
Tensor column_value(py::handle v, const char* producer) {
  if (py::isinstance<Tensor>(v)) return v.cast<Tensor>();
  if (py::isinstance<py::array>(v)) return tensor_from_array(py::reinterpret_borrow<py::array>(v), std::nullopt, false);
  if (PyBool_Check(v.ptr()) || PyLong_Check(v.ptr()) || PyFloat_Check(v.ptr()))
    throw Error(ErrorCode::kDType,
                std::string("Failed to create tensor from numpy array, data type is unknown: ") + producer +
                    " returned a Python " + std::string(py::str(py::type::handle_of(v).attr("__name__"))) +
                    ", which has no dtype; return np.asarray([value], dtype=np.float32) (or another explicit "
                    "dtype) instead");
  if (py::hasattr(v, "dtype")) return tensor_from_object(v, std::nullopt, false, producer);  // NumPy scalars
  if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v))
    throw Error(ErrorCode::kDType, std::string(producer) + " returned a Python list for one column, which has no "
                                                           "dtype; return a NumPy array with an explicit dtype");
  throw Error(ErrorCode::kDType, std::string(producer) + " returned a " +
                                     std::string(py::str(py::type::handle_of(v).attr("__name__"))) +
                                     " for a column; return NumPy arrays or Tensors");
}

data::Row row_of(py::handle item, const char* producer) {
  data::Row row;
  if (py::isinstance<py::tuple>(item) || py::isinstance<py::list>(item)) {
    for (auto v : item) row.push_back(column_value(v, producer));
  } else {
    row.push_back(column_value(item, producer));
  }
  return row;
}

// Wraps the body of a Python callback: the GIL, and Python exceptions kept by ticket. Never once
// the interpreter is finalizing: a thread that asks for the GIL then is ended with pthread_exit
// by Python, which unwinds C++ frames that do not expect it (NOTE [Passes at exit]).
template <typename F>
auto with_python(F&& f) -> decltype(f()) {
  if (!Py_IsInitialized())
    throw Error(ErrorCode::kValue, "the Python interpreter is exiting: the pipeline's Python function was not called");
  py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    throw_from_python_error(e);
  }
}

py::object out_value(const Tensor& t, bool numpy) { return numpy ? py::object(tensor_to_array(t)) : py::cast(t); }

// A pass over a pipeline as Python holds it. NOTE [Passes at exit]: a pass's map workers are
// C++ threads that take the GIL to call Python. Ending a pass stops and joins them, with the GIL
// released (they may be waiting for it). That must happen before the interpreter finalizes: a
// KeyboardInterrupt in a loop over a dataset leaves the pass referenced by the traceback until
// the modules are torn down, and a worker that then asks for the GIL is ended by Python with
// pthread_exit (an abort, "FATAL: exception not rethrown", or a crash). So every live pass is
// registered, and an atexit function (atexit runs while the interpreter is intact) closes them
// all. next() and close() take the pass's lock with the GIL released, so a second Python thread
// never iterates or closes a pass under a running next().
struct PassState {
  std::mutex mu;
  std::unique_ptr<data::TupleIterator> it;  // null once closed
  void close() {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(mu);
    it.reset();
  }
};

std::vector<std::weak_ptr<PassState>>& live_passes() {  // touched with the GIL held
  static auto* v = new std::vector<std::weak_ptr<PassState>>();  // never destroyed: used at exit
  return *v;
}

void close_live_passes() {
  std::vector<std::weak_ptr<PassState>> passes;
  passes.swap(live_passes());
  for (auto& w : passes)
    if (auto p = w.lock()) p->close();
}

struct PyPass {
  std::shared_ptr<PassState> state = std::make_shared<PassState>();
  explicit PyPass(data::TupleIterator i) {
    state->it = std::make_unique<data::TupleIterator>(std::move(i));
    auto& live = live_passes();
    live.erase(std::remove_if(live.begin(), live.end(), [](const auto& w) { return w.expired(); }), live.end());
    live.push_back(state);
  }
  PyPass(PyPass&&) = default;
  ~PyPass() {
    if (state && Py_IsInitialized() && PyGILState_Check()) state->close();
  }

  std::optional<data::Row> next() {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->it)
      throw Error(ErrorCode::kValue, "this dataset iterator was closed when the interpreter began to exit");
    return state->it->next();
  }
  std::vector<std::string> column_names() const {
    py::gil_scoped_release nogil;
    std::lock_guard<std::mutex> lock(state->mu);
    if (!state->it) return {};
    return state->it->column_names();
  }
};

}  // namespace

data::RandomAccessFn python_random_access(py::object source) {
  auto ref = std::make_shared<PyRef>(std::move(source));
  return [ref](int64_t i) {
    return with_python([&] { return row_of(ref->obj[py::int_(i)], "the source's __getitem__"); });
  };
}

void bind_data(py::module_& root) {
  py::module_ m = root.def_submodule("data", "the dataset pipeline (spore::data)");
  py::class_<PyPass>(m, "TupleIterator", py::module_local())
      .def("next", [](PyPass& p, bool numpy) -> py::object {
        std::optional<data::Row> row = p.next();
        if (!row) return py::none();
        py::list out;
        for (const Tensor& t : *row) out.append(out_value(t, numpy));
        return out;
      }, py::arg("output_numpy") = false)
      .def_property_readonly("column_names", [](const PyPass& p) { return p.column_names(); });
  py::module_::import("atexit").attr("register")(py::cpp_function(&close_live_passes));

  py::class_<data::Dataset>(m, "Dataset", py::module_local())
      .def("map", [](const data::Dataset& d, py::function f, std::vector<std::string> in, std::vector<std::string> out,
                     int workers) {
        auto ref = std::make_shared<PyRef>(f);
        data::MapFn fn = [ref](const data::Row& inputs) {
          return with_python([&] {
            py::list args;
            for (const Tensor& t : inputs) args.append(tensor_to_array(t));
            return row_of(ref->obj(*args), "the map function");
          });
        };
        return d.map(fn, in, out, workers);
      }, py::arg("fn"), py::arg("input_columns"), py::arg("output_columns"), py::arg("num_parallel_workers") = 1)
      .def("shuffle", &data::Dataset::shuffle, py::arg("buffer_size"), py::arg("seed"))
      .def("batch", &data::Dataset::batch, py::arg("batch_size"), py::arg("drop_remainder") = false)
      .def("repeat", &data::Dataset::repeat, py::arg("count") = -1)
      .def("project", &data::Dataset::project, py::arg("columns"))
      .def("create_tuple_iterator", [](const data::Dataset& d) { return PyPass(d.create_tuple_iterator()); })
      .def("get_dataset_size", &data::Dataset::get_dataset_size)
      .def_property_readonly("column_names", &data::Dataset::column_names)
      .def("describe", &data::Dataset::describe);

  // A random-access source: source[i] for i < num_rows.
  m.def("random_access", [](py::object source, int64_t rows, std::vector<std::string> columns) {
    return data::GeneratorDataset(python_random_access(std::move(source)), rows, columns);
  });
  // A sequential source: make_iter() gives a fresh Python iterator for each pass.
  m.def("sequential", [](py::function make_iter, std::vector<std::string> columns) {
    auto ref = std::make_shared<PyRef>(make_iter);
    data::GeneratorFactory factory = [ref]() -> data::GeneratorFn {
      auto it = with_python([&] { return std::make_shared<PyRef>(ref->obj()); });
      return [it]() -> std::optional<data::Row> {
        return with_python([&]() -> std::optional<data::Row> {
          PyObject* item = PyIter_Next(it->obj.ptr());
          if (!item) {
            if (PyErr_Occurred()) throw py::error_already_set();
            return std::nullopt;
          }
          py::object owned = py::reinterpret_steal<py::object>(item);
          return row_of(owned, "the generator");
        });
      };
    };
    return data::GeneratorDataset(factory, columns);
  });
}

}  // namespace spore::py_bind
