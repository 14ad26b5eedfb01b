// spore_lite._spore_lite: the Lite runtime as a Python extension, linking spore_lite and what it
// needs (the format library and the core), never the framework library (NOTE [Python modules]):
// tests/python/test_two_runtimes.py reads this .so's symbol table to hold that to the truth.
// MindSpore Lite's spelling: Context (target list, cpu.thread_num), Model.build_from_file(path,
// ModelType, context), predict(inputs), get_inputs/get_outputs, Tensor with
// set_data_from_numpy/get_data_to_numpy.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <mutex>

#include "common/convert.h"
#include "common/errors.h"
#include "spore/lite.h"
#include "spore/ops.h"

namespace py = pybind11;
using namespace spore;
using spore::py_bind::tensor_from_object;
using spore::py_bind::tensor_to_array;

namespace {

// The model plus the signature it was asked for (get_inputs returns tensors to fill).
// A built model and the lock that serialises its use. predict runs with the GIL released, so
// another Python thread may call predict, resize or build_from_file on the same Model meanwhile:
// each call holds its own reference to the built model (a rebuild replaces it without freeing it
// under a running predict) and takes the lock with the GIL released (a call that waits for the
// lock never holds the GIL that the one holding the lock may need to free a NumPy input).
struct Built {
  explicit Built(lite::Model m) : model(std::move(m)) {}
  lite::Model model;
  std::mutex mu;
};

struct PyModel {
  std::shared_ptr<Built> built;
  std::shared_ptr<Built> get() const {
    if (!built) throw Error(ErrorCode::kValue, "Model: call build_from_file(path, ModelType, context) first");
    return built;
  }
};

// Runs fn(model) under the model's lock, with the GIL released.
template <typename Fn>
auto with_model(const PyModel& pm, Fn&& fn) {
  std::shared_ptr<Built> b = pm.get();
  py::gil_scoped_release nogil;
  std::lock_guard<std::mutex> lock(b->mu);
  return fn(b->model);
}

py::tuple shape_tuple(const Tensor& t) {
  py::tuple s(t.ndim());
  for (int d = 0; d < t.ndim(); ++d) s[d] = t.shape()[d];
  return s;
}

Tensor input_of(py::handle h) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  // A spore.Tensor (the framework's own, another type in this module) or anything with
  // __array__/asnumpy: through NumPy, sharing memory where it can (NOTE [NumPy sharing]).
  if (!py::isinstance<py::array>(h) && py::hasattr(h, "asnumpy"))
    return tensor_from_object(h.attr("asnumpy")(), std::nullopt, true, "predict input");
  return tensor_from_object(h, std::nullopt, true, "predict input");
}

}  // namespace

PYBIND11_MODULE(_spore_lite, m) {
  m.doc() = "Spore Lite: the inference runtime alone (MindSpore Lite's spelling)";
  spore::py_bind::register_errors(m);

  py::enum_<DType>(m, "DataType", py::module_local())
      .value("BOOL", DType::kBool)
      .value("INT8", DType::kInt8)
      .value("UINT8", DType::kUInt8)
      .value("INT32", DType::kInt32)
      .value("INT64", DType::kInt64)
      .value("FLOAT16", DType::kFloat16)
      .value("BFLOAT16", DType::kBFloat16)
      .value("FLOAT32", DType::kFloat32)
      .value("FLOAT64", DType::kFloat64);

  py::class_<Tensor>(m, "Tensor", py::module_local())
      .def(py::init([](py::object data) {
             if (data.is_none()) return Tensor();
             return tensor_from_object(data, std::nullopt, true, "spore_lite.Tensor");
           }),
           py::arg("tensor") = py::none())
      .def("set_data_from_numpy", [](Tensor& t, py::array a) { t = tensor_from_object(a, std::nullopt, true, "set_data_from_numpy"); })
      .def("get_data_to_numpy", &tensor_to_array)
      .def("asnumpy", &tensor_to_array)
      .def("__array__", [](const Tensor& t, py::object) { return tensor_to_array(t); }, py::arg("dtype") = py::none())
      .def_property_readonly("shape", &shape_tuple)
      .def("get_shape", [](const Tensor& t) { return std::vector<int64_t>(t.shape().begin(), t.shape().end()); })
      .def_property_readonly("dtype", [](const Tensor& t) { return t.dtype(); })
      .def("get_data_type", [](const Tensor& t) { return t.dtype(); })
      .def("get_element_num", [](const Tensor& t) { return t.numel(); })
      .def("get_data_size", [](const Tensor& t) { return t.nbytes(); })
      .def("__repr__", [](const Tensor& t) { return t.str(); });

  py::enum_<lite::ModelType>(m, "ModelType", py::module_local())
      // MindSpore Lite's MINDIR: Spore writes its own IR for MINDIR exports (spore.export), so
      // MINDIR accepts that, and MindSpore's own MindIR protobuf too (NOTE [MindIR]).
      .value("MINDIR", lite::ModelType::kAuto)
      .value("MINDIR_LITE", lite::ModelType::kAuto)
      .value("SPORE", lite::ModelType::kSpore)
      .value("ONNX", lite::ModelType::kONNX)
      .value("AUTO", lite::ModelType::kAuto);

  py::class_<lite::Context>(m, "_Context", py::module_local())
      .def(py::init<>())
      .def_readwrite("targets", &lite::Context::targets)
      .def_readwrite("num_threads", &lite::Context::num_threads);

  py::class_<lite::TensorInfo>(m, "TensorInfo", py::module_local())
      .def_readonly("name", &lite::TensorInfo::name)
      .def_readonly("dtype", &lite::TensorInfo::dtype)
      .def_readonly("shape", &lite::TensorInfo::shape)
      .def("__repr__", &lite::TensorInfo::str);

  py::class_<PyModel>(m, "_Model", py::module_local())
      .def(py::init<>())
      .def("build_from_file", [](PyModel& pm, const std::filesystem::path& path, lite::ModelType type,
                                 const lite::Context& ctx) {
        std::shared_ptr<Built> b;
        {
          py::gil_scoped_release nogil;
          b = std::make_shared<Built>(lite::Model::build_from_file(path, type, ctx));
        }
        pm.built = std::move(b);
      }, py::arg("model_path"), py::arg("model_type"), py::arg("context"))
      .def("predict", [](PyModel& pm, py::iterable inputs) {
        std::vector<Tensor> in;  // copies: the inputs live until the call returns
        for (auto h : inputs) in.push_back(input_of(h));
        return with_model(pm, [&](lite::Model& m) { return m.predict(in); });
      }, py::arg("inputs"))
      .def("resize", [](PyModel& pm, std::map<std::string, std::vector<int64_t>> shapes) {
        with_model(pm, [&](lite::Model& m) { m.resize(shapes); return 0; });
      })
      .def("input_infos", [](PyModel& pm) { return with_model(pm, [](lite::Model& m) { return m.inputs(); }); })
      .def("output_infos", [](PyModel& pm) { return with_model(pm, [](lite::Model& m) { return m.outputs(); }); })
      .def_property_readonly("target", [](PyModel& pm) {
        return with_model(pm, [](lite::Model& m) { return m.target(); });
      })
      .def_property_readonly("skipped_targets", [](PyModel& pm) {
        return with_model(pm, [](lite::Model& m) { return m.skipped_targets(); });
      });
  m.def("readable_ir_versions", &lite::readable_ir_versions);
}
