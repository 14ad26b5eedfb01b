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

// Wraps the body of a Python callback: the GIL, and Python exceptions kept by ticket.
template <typename F>
auto with_python(F&& f) -> decltype(f()) {
  py::gil_scoped_acquire gil;
  try {
    return f();
  } catch (py::error_already_set& e) {
    throw_from_python_error(e);
  }
}

py::object out_value(const Tensor& t, bool numpy) { return numpy ? py::object(tensor_to_array(t)) : py::cast(t); }

// A pass over a pipeline as Python holds it. Ending a pass stops and joins the map workers, which
// may be waiting for the GIL to call a Python function: the GIL is released while they stop, or a
// loop left early (break, an exception) would deadlock the interpreter.
struct PyPass {
  std::unique_ptr<data::TupleIterator> it;
  explicit PyPass(data::TupleIterator i) : it(std::make_unique<data::TupleIterator>(std::move(i))) {}
  PyPass(PyPass&&) = default;
  ~PyPass() {
    if (it && Py_IsInitialized() && PyGILState_Check()) {
      py::gil_scoped_release nogil;
      it.reset();
    }
  }
};

}  // namespace

void bind_data(py::module_& root) {
  py::module_ m = root.def_submodule("data", "the dataset pipeline (spore::data)");
  py::class_<PyPass>(m, "TupleIterator", py::module_local())
      .def("next", [](PyPass& p, bool numpy) -> py::object {
        std::optional<data::Row> row;
        {
          py::gil_scoped_release nogil;
          row = p.it->next();
        }
        if (!row) return py::none();
        py::list out;
        for (const Tensor& t : *row) out.append(out_value(t, numpy));
        return out;
      }, py::arg("output_numpy") = false)
      .def_property_readonly("column_names", [](const PyPass& p) { return p.it->column_names(); });

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
    auto ref = std::make_shared<PyRef>(source);
    data::RandomAccessFn fn = [ref](int64_t i) {
      return with_python([&] { return row_of(ref->obj[py::int_(i)], "the source's __getitem__"); });
    };
    return data::GeneratorDataset(fn, rows, columns);
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
