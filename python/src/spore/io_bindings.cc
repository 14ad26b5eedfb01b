// Checkpoints, export to Spore IR or ONNX, and the environment report (NOTE [Python modules]).
#include <pybind11/functional.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include "common/errors.h"
#include "spore/bindings.h"
#include "spore/checkpoint.h"
#include "spore/export.h"
#include "spore/format.h"
#include "spore/ms_checkpoint.h"
#include "spore/probe.h"

namespace py = pybind11;

namespace spore::py_bind {

void bind_io(py::module_& m) {
  m.def("_save_checkpoint", [](const std::vector<std::pair<std::string, Tensor>>& params,
                               const std::filesystem::path& path, const std::map<std::string, std::string>& meta) {
    py::gil_scoped_release nogil;
    save_checkpoint(params, path, meta);
  });
  // -> (dict name -> Tensor, metadata dict); tensors in file order is not kept (names sorted).
  m.def("_load_checkpoint", [](const std::filesystem::path& path) {
    Checkpoint c;
    {
      py::gil_scoped_release nogil;
      c = load_checkpoint(path);
    }
    return py::make_tuple(c.tensors, c.metadata);
  });
  // MindSpore's own .ckpt (NOTE [MindSpore checkpoints]): [(name, Tensor)] in file order.
  m.def("_save_ms_checkpoint", [](const std::vector<std::pair<std::string, Tensor>>& params, const std::filesystem::path& path) {
    py::gil_scoped_release nogil;
    ms::save_ms_checkpoint(params, path);
  });
  m.def("_load_ms_checkpoint", [](const std::filesystem::path& path) {
    ms::MsParams p;
    {
      py::gil_scoped_release nogil;
      p = ms::read_ms_checkpoint(path);
    }
    return p;
  });
  m.def("_framework_version", [] { return std::string(framework_version()); });

  // fn(list of tensors) -> Tensor or tuple; names: (name, tensor) of the parameters the function
  // reads, so the file names them as the network does ("0.weight").
  m.def("_export", [](py::function f, const std::vector<Tensor>& inputs, const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, Tensor>>& names, uint32_t version,
                      const std::map<int, std::map<int, std::string>>& dynamic_axes, bool onnx) {
    auto ref = std::make_shared<PyRef>(f);
    TensorsFn fn = [ref](const std::vector<Tensor>& in) {
      py::gil_scoped_acquire gil;
      try {
        py::object r = ref->obj(py::cast(in));
        if (py::isinstance<Tensor>(r)) return std::vector<Tensor>{r.cast<Tensor>()};
        return r.cast<std::vector<Tensor>>();
      } catch (py::error_already_set& e) {
        throw_from_python_error(e);
      } catch (py::cast_error&) {
        throw Error(ErrorCode::kValue, "export: the network must return a Tensor or a tuple of Tensors");
      }
    };
    std::map<const void*, std::string> by_impl;
    for (const auto& [n, t] : names) by_impl.emplace(t.impl(), n);
    ExportOptions o;
    o.ir_version = version;
    o.dynamic_axes = dynamic_axes;
    // ONNX: the same traced graph without the passes (a fused node has no ONNX op), checked by
    // the ONNX library, as export_onnx writes it.
    o.optimize = !onnx;
    ir::Model model = trace_to_ir(fn, inputs, o, by_impl);
    if (!onnx) {
      ir::write_model(path, model, {version});
      return;
    }
    const std::string bytes = ir_to_onnx_bytes(model);
    atomic_write_file(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  });

  m.def("_env_report", [](const std::vector<std::string>& argv) {
    probe::Json env = probe::collect_env(argv);
    return py::make_tuple(probe::format_env(env), env.dump());
  });
  m.def("_sha256_file", &probe::sha256_file);
}

}  // namespace spore::py_bind
