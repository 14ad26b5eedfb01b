// spore.Tensor, the dtypes and set_context (NOTE [Python modules], NOTE [NumPy sharing]).
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cctype>

#include "common/convert.h"
#include "common/errors.h"
#include "spore/bindings.h"
#include "spore/context.h"
#include "spore/ops.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

std::optional<DType> opt_dtype(py::handle h) {
  if (h.is_none()) return std::nullopt;
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h)) return dtype_from_name(h.cast<std::string>());
  // numpy dtypes and types (np.float32)
  try {
    py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(h));
    if (auto t = dtype_from_numpy(dt)) return t;
  } catch (py::error_already_set&) {
    PyErr_Clear();
  }
  throw Error(ErrorCode::kDType, "dtype: " + std::string(py::str(py::repr(h))) +
                                     " is not a Spore dtype; use spore.float16, bfloat16, float32, float64, "
                                     "int8, uint8, int32, int64 or bool_");
}

int64_t norm_axis(int64_t axis, int64_t extent_count, const char* what) {
  if (axis < -extent_count || axis >= extent_count)
    throw Error(ErrorCode::kIndex, std::string(what) + ": axis " + std::to_string(axis) + " is out of range for " +
                                       std::to_string(extent_count) + " dimensions");
  return axis < 0 ? axis + extent_count : axis;
}

// x[index]: ints, slices (step > 0), None, Ellipsis and 1-D integer index tensors/lists, as
// NumPy's basic indexing; ints and slices give views (NOTE [Views]).
Tensor getitem(const Tensor& x, py::handle index) {
  py::tuple items = py::isinstance<py::tuple>(index) ? py::reinterpret_borrow<py::tuple>(index)
                                                     : py::make_tuple(py::reinterpret_borrow<py::object>(index));
  int consuming = 0;
  bool ellipsis = false;
  for (auto it : items) {
    if (it.is_none()) continue;
    if (it.ptr() == Py_Ellipsis) {
      if (ellipsis) throw Error(ErrorCode::kIndex, "Tensor index: only one Ellipsis (...) is allowed");
      ellipsis = true;
      continue;
    }
    ++consuming;
  }
  if (consuming > x.ndim())
    throw Error(ErrorCode::kIndex, "Tensor index: " + std::to_string(consuming) + " indices for a tensor of " +
                                       std::to_string(x.ndim()) + " dimensions, shape " + x.shape().str());
  Tensor r = x;
  int64_t axis = 0;
  for (auto it : items) {
    if (it.is_none()) {
      r = unsqueeze(r, axis++);
    } else if (it.ptr() == Py_Ellipsis) {
      axis += x.ndim() - consuming;
    } else if (PyLong_Check(it.ptr()) || (py::hasattr(it, "__index__") && !py::isinstance<Tensor>(it) &&
                                              !py::isinstance<py::array>(it))) {
      int64_t i = py::int_(py::reinterpret_borrow<py::object>(it)).cast<int64_t>();
      const int64_t n = r.shape()[(int)axis];
      if (i < -n || i >= n)
        throw Error(ErrorCode::kIndex, "Tensor index " + std::to_string(i) + " is out of bounds for axis " +
                                           std::to_string(axis) + " with size " + std::to_string(n));
      if (i < 0) i += n;
      r = squeeze(slice(r, axis, i, i + 1), axis);
    } else if (PySlice_Check(it.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(it.ptr(), &start, &stop, &step) < 0) throw py::error_already_set();
      const Py_ssize_t n = r.shape()[(int)axis];
      PySlice_AdjustIndices(n, &start, &stop, step);
      if (step <= 0)
        throw Error(ErrorCode::kUnsupported, "Tensor index: slice step " + std::to_string(step) +
                                                 " is not supported (steps must be positive); flip with "
                                                 "an index tensor instead");
      if (stop < start) stop = start;
      r = slice(r, axis, start, stop, step);
      ++axis;
    } else if (PyFloat_Check(it.ptr()) || py::isinstance<py::str>(it)) {
      throw Error(ErrorCode::kIndex, "Tensor index: a " + std::string(py::str(py::type::handle_of(it).attr("__name__"))) +
                                         " is not an index; use ints, slices, None, ... or an integer index tensor");
    } else {
      Tensor idx = tensor_from_object(it, std::nullopt, false, "Tensor index");
      if (idx.dtype() == DType::kBool)
        throw Error(ErrorCode::kUnsupported, "Tensor index: boolean masks are not supported; use "
                                             "ops.masked_select-free forms such as ops.where");
      if (idx.ndim() != 1)
        throw Error(ErrorCode::kUnsupported, "Tensor index: an index tensor must be 1-D, got shape " +
                                                 idx.shape().str());
      r = index_select(r, axis, idx);
      ++axis;
    }
  }
  return r;
}

void setitem(const Tensor& x, py::handle index, py::handle value) {
  Tensor view = getitem(x, index);
  if (!view.same_storage(x))
    throw Error(ErrorCode::kUnsupported, "Tensor assignment through an index tensor is not supported; "
                                         "index with ints and slices");
  view.copy_(tensor_from_object(value, view.dtype(), false, "Tensor assignment"));
}

Tensor operand(py::handle h, const Tensor& like, const char* what) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()))
    return scalar_like(like, h.cast<double>());
  return tensor_from_object(h, std::nullopt, false, what);
}

std::string dtype_display(DType t) {
  std::string n = dtype_name(t);
  if (n == "bfloat16") return "BFloat16";
  if (n == "bool") return "Bool";
  n[0] = (char)std::toupper(n[0]);
  if (n.rfind("Uint", 0) == 0) n = "UInt" + n.substr(4);
  return n;
}

py::tuple shape_tuple(const Tensor& t) {
  py::tuple s(t.ndim());
  for (int d = 0; d < t.ndim(); ++d) s[d] = t.shape()[d];
  return s;
}

std::vector<int64_t> axes_of(py::handle h) {
  if (h.is_none()) return {};
  if (PyLong_Check(h.ptr())) return {h.cast<int64_t>()};
  return h.cast<std::vector<int64_t>>();
}

std::vector<int64_t> shape_args(py::args args) {
  if (args.size() == 1 && !PyLong_Check(args[0].ptr())) return args[0].cast<std::vector<int64_t>>();
  return args.cast<std::vector<int64_t>>();
}

}  // namespace

void bind_tensor(py::module_& m) {
  py::enum_<DType> dt(m, "dtype", py::module_local(), "Spore's element types (MindSpore's mindspore.dtype)");
  dt.value("bool_", DType::kBool)
      .value("int8", DType::kInt8)
      .value("uint8", DType::kUInt8)
      .value("int32", DType::kInt32)
      .value("int64", DType::kInt64)
      .value("float16", DType::kFloat16)
      .value("bfloat16", DType::kBFloat16)
      .value("float32", DType::kFloat32)
      .value("float64", DType::kFloat64);
  // MindSpore prints dtypes as Float32, Float16, ...; replaced, not overloaded (pybind's enum
  // __repr__ would be tried first).
  dt.attr("__repr__") = py::cpp_function([](DType t) { return dtype_display(t); }, py::is_method(dt));
  dt.attr("__str__") = py::cpp_function([](DType t) { return dtype_display(t); }, py::is_method(dt));
  dt.def_property_readonly("itemsize", [](DType t) { return dtype_size(t); });
  dt.def_property_readonly("name", [](DType t) { return std::string(dtype_name(t)); });
  dt.def_property_readonly("is_floating_point", [](DType t) { return is_floating(t); });

  py::class_<Tensor> t(m, "Tensor", py::module_local(), py::buffer_protocol(),
                       "A typed, shaped array on a device (MindSpore's mindspore.Tensor).");
  t.def(py::init([](py::object data, py::object dtype, py::object shape) {
          std::optional<DType> d = opt_dtype(dtype);
          if (data.is_none()) {
            if (shape.is_none())
              throw Error(ErrorCode::kValue, "Tensor(): give input_data, or a shape and a dtype");
            return zeros(shape.cast<std::vector<int64_t>>(), d.value_or(DType::kFloat32));
          }
          return tensor_from_object(data, d, true, "Tensor");
        }),
        py::arg("input_data") = py::none(), py::arg("dtype") = py::none(), py::arg("shape") = py::none());
  t.def_buffer([](const Tensor& x) -> py::buffer_info {
    if (x.device() != Device::cpu())
      throw Error(ErrorCode::kDevice, "the buffer protocol needs a host tensor; call asnumpy()");
    std::string fmt;
    switch (x.dtype()) {
      case DType::kBool: fmt = "?"; break;
      case DType::kInt8: fmt = "b"; break;
      case DType::kUInt8: fmt = "B"; break;
      case DType::kInt32: fmt = py::format_descriptor<int32_t>::format(); break;
      case DType::kInt64: fmt = py::format_descriptor<int64_t>::format(); break;
      case DType::kFloat16: fmt = "e"; break;
      case DType::kFloat32: fmt = "f"; break;
      case DType::kFloat64: fmt = "d"; break;
      case DType::kBFloat16:
        throw Error(ErrorCode::kDType, "bfloat16 has no buffer-protocol format; use asnumpy()");
    }
    std::vector<py::ssize_t> shape, strides;
    for (int d = 0; d < x.ndim(); ++d) {
      shape.push_back(x.shape()[d]);
      strides.push_back(x.strides()[d] * (py::ssize_t)x.itemsize());
    }
    return py::buffer_info(x.numel() ? x.data_ptr() : nullptr, (py::ssize_t)x.itemsize(), fmt, x.ndim(), shape,
                           strides, !x.storage()->writable());
  });
  t.def("asnumpy", &tensor_to_array, "A NumPy view of the tensor's memory (NOTE [NumPy sharing])");
  t.def("numpy", &tensor_to_array);
  t.def("__array__", [](const Tensor& x, py::object dtype) {
    py::array a = tensor_to_array(x);
    return dtype.is_none() ? a : py::array(a.attr("astype")(dtype));
  }, py::arg("dtype") = py::none());
  t.def_property_readonly("shape", &shape_tuple);
  t.def_property_readonly("dtype", [](const Tensor& x) { return x.dtype(); });
  t.def_property_readonly("ndim", [](const Tensor& x) { return x.ndim(); });
  t.def_property_readonly("size", [](const Tensor& x) { return x.numel(); });
  t.def_property_readonly("itemsize", [](const Tensor& x) { return x.itemsize(); });
  t.def_property_readonly("nbytes", [](const Tensor& x) { return x.nbytes(); });
  t.def_property_readonly("strides", [](const Tensor& x) {
    py::tuple s(x.ndim());
    for (int d = 0; d < x.ndim(); ++d) s[d] = x.strides()[d] * (int64_t)x.itemsize();
    return s;
  });
  t.def_property_readonly("device", [](const Tensor& x) { return x.device().str(); });
  t.def_property_readonly("T", [](const Tensor& x) {
    std::vector<int64_t> axes;
    for (int d = x.ndim() - 1; d >= 0; --d) axes.push_back(d);
    return permute(x, axes);
  });
  t.def("dim", [](const Tensor& x) { return x.ndim(); });
  t.def("is_contiguous", &Tensor::is_contiguous);
  t.def("contiguous", &Tensor::contiguous);
  t.def("copy", &Tensor::clone);
  t.def("clone", &Tensor::clone);
  t.def("copy_", [](const Tensor& x, py::handle src) {
    x.copy_(tensor_from_object(src, x.dtype(), false, "copy_"));
    return x;
  });
  t.def("shares_memory_with", &Tensor::same_storage);
  t.def("item", [](const Tensor& x) -> py::object {
    if (x.numel() != 1) (void)x.item<double>();  // raises the shape error
    return tensor_to_array(x).attr("reshape")(py::tuple()).attr("item")();
  });
  t.def("tolist", [](const Tensor& x) { return tensor_to_array(x).attr("tolist")(); });
  t.def("astype", [](const Tensor& x, py::object d) { return cast(x, *opt_dtype(d)); }, py::arg("dtype"));
  t.def("to", [](const Tensor& x, py::object d) { return cast(x, *opt_dtype(d)); }, py::arg("dtype"));
  t.def("float", [](const Tensor& x) { return cast(x, DType::kFloat32); });
  t.def("half", [](const Tensor& x) { return cast(x, DType::kFloat16); });
  t.def("reshape", [](const Tensor& x, py::args s) { return reshape(x, shape_args(s)); });
  t.def("view", [](const Tensor& x, py::args s) { return reshape(x, shape_args(s)); });
  t.def("transpose", [](const Tensor& x, py::args axes) {
    std::vector<int64_t> a = axes.size() ? shape_args(axes) : std::vector<int64_t>{};
    if (a.empty())
      for (int d = x.ndim() - 1; d >= 0; --d) a.push_back(d);
    return permute(x, a);
  });
  t.def("permute", [](const Tensor& x, py::args axes) { return permute(x, shape_args(axes)); });
  t.def("swapaxes", [](const Tensor& x, int64_t a, int64_t b) { return transpose(x, a, b); });
  t.def("flatten", [](const Tensor& x, int64_t s, int64_t e) { return flatten(x, s, e); },
        py::arg("start_dim") = 0, py::arg("end_dim") = -1);
  t.def("squeeze", [](const Tensor& x, std::optional<int64_t> a) { return squeeze(x, a); },
        py::arg("axis") = py::none());
  t.def("expand_dims", [](const Tensor& x, int64_t a) { return unsqueeze(x, a); }, py::arg("axis"));
  t.def("unsqueeze", [](const Tensor& x, int64_t a) { return unsqueeze(x, a); }, py::arg("dim"));
  t.def("broadcast_to", [](const Tensor& x, std::vector<int64_t> s) { return expand(x, s); });
  t.def("expand", [](const Tensor& x, py::args s) { return expand(x, shape_args(s)); });
  t.def("sum", [](const Tensor& x, py::object axis, bool keep) { return sum(x, axes_of(axis), keep); },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  t.def("mean", [](const Tensor& x, py::object axis, bool keep) { return mean(x, axes_of(axis), keep); },
        py::arg("axis") = py::none(), py::arg("keep_dims") = false);
  t.def("max", [](const Tensor& x, py::object axis, bool keep) { return max(x, axes_of(axis), keep); },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  t.def("min", [](const Tensor& x, py::object axis, bool keep) { return min(x, axes_of(axis), keep); },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  t.def("var", [](const Tensor& x, py::object axis, int64_t ddof, bool keep) {
          return var(x, axes_of(axis), ddof, keep);
        }, py::arg("axis") = py::none(), py::arg("ddof") = 0, py::arg("keepdims") = false);
  t.def("argmax", [](const Tensor& x, std::optional<int64_t> a, bool k) { return argmax(x, a, k); },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  t.def("argmin", [](const Tensor& x, std::optional<int64_t> a, bool k) { return argmin(x, a, k); },
        py::arg("axis") = py::none(), py::arg("keepdims") = false);
  t.def("abs", [](const Tensor& x) { return abs(x); });
  t.def("exp", [](const Tensor& x) { return exp(x); });
  t.def("log", [](const Tensor& x) { return log(x); });
  t.def("sqrt", [](const Tensor& x) { return sqrt(x); });
  t.def("sigmoid", [](const Tensor& x) { return sigmoid(x); });
  t.def("tanh", [](const Tensor& x) { return tanh(x); });
  t.def("relu", [](const Tensor& x) { return relu(x); });
  t.def("softmax", [](const Tensor& x, int64_t a) { return softmax(x, a); }, py::arg("axis") = -1);
  t.def("matmul", [](const Tensor& a, const Tensor& b) { return matmul(a, b); });

  // ---- operators: Tensor op Tensor first (the fast path), then numbers, then anything NumPy takes
#define SPORE_PY_BINARY(pyname, fn)                                                                        \
  t.def(pyname, [](const Tensor& a, const Tensor& b) { return fn(a, b); }, py::is_operator());             \
  t.def(pyname, [](const Tensor& a, double b) { return fn(a, scalar_like(a, b)); }, py::is_operator());    \
  t.def(pyname, [](const Tensor& a, py::object b) { return fn(a, operand(b, a, pyname)); }, py::is_operator());
#define SPORE_PY_RBINARY(pyname, fn)                                                                       \
  t.def(pyname, [](const Tensor& a, double b) { return fn(scalar_like(a, b), a); }, py::is_operator());    \
  t.def(pyname, [](const Tensor& a, py::object b) { return fn(operand(b, a, pyname), a); }, py::is_operator());
  t.def("__add__", [](const Tensor& a, const Tensor& b) { return add(a, b); }, py::is_operator());
  t.def("__add__", [](const Tensor& a, double b) { return add(a, b); }, py::is_operator());
  t.def("__add__", [](const Tensor& a, py::object b) { return add(a, operand(b, a, "+")); }, py::is_operator());
  t.def("__mul__", [](const Tensor& a, const Tensor& b) { return mul(a, b); }, py::is_operator());
  t.def("__mul__", [](const Tensor& a, double b) { return mul(a, b); }, py::is_operator());
  t.def("__mul__", [](const Tensor& a, py::object b) { return mul(a, operand(b, a, "*")); }, py::is_operator());
  SPORE_PY_BINARY("__sub__", sub)
  SPORE_PY_BINARY("__truediv__", div)
  SPORE_PY_BINARY("__pow__", pow)
  SPORE_PY_BINARY("__matmul__", matmul)
  SPORE_PY_BINARY("__eq__", eq)
  SPORE_PY_BINARY("__ne__", ne)
  SPORE_PY_BINARY("__lt__", lt)
  SPORE_PY_BINARY("__le__", le)
  SPORE_PY_BINARY("__gt__", gt)
  SPORE_PY_BINARY("__ge__", ge)
  SPORE_PY_BINARY("__and__", logical_and)
  SPORE_PY_BINARY("__or__", logical_or)
  SPORE_PY_RBINARY("__radd__", add)
  SPORE_PY_RBINARY("__rmul__", mul)
  SPORE_PY_RBINARY("__rsub__", sub)
  SPORE_PY_RBINARY("__rtruediv__", div)
  SPORE_PY_RBINARY("__rpow__", pow)
  SPORE_PY_RBINARY("__rmatmul__", matmul)
#undef SPORE_PY_BINARY
#undef SPORE_PY_RBINARY
  t.def("__neg__", [](const Tensor& a) { return neg(a); });
  t.def("__abs__", [](const Tensor& a) { return abs(a); });
  t.def("__invert__", [](const Tensor& a) { return logical_not(a); });
  t.def("__hash__", [](const Tensor& a) { return (size_t)a.impl(); });
  t.def("__len__", [](const Tensor& a) {
    if (a.ndim() == 0) throw py::type_error("len() of a 0-d tensor");
    return a.shape()[0];
  });
  t.def("__bool__", [](const Tensor& a) {
    if (a.numel() != 1)
      throw Error(ErrorCode::kValue, "the truth value of a tensor with " + std::to_string(a.numel()) +
                                         " elements is ambiguous; use .any()-style reductions (ops.max) or compare item()");
    return a.item<double>() != 0;
  });
  t.def("__float__", [](const Tensor& a) { return a.item<double>(); });
  t.def("__int__", [](const Tensor& a) { return a.item<int64_t>(); });
  t.def("__index__", [](const Tensor& a) {
    if (!is_integral(a.dtype())) throw py::type_error("only integer tensors can be used as an index");
    return a.item<int64_t>();
  });
  t.def("__getitem__", &getitem);
  t.def("__setitem__", &setitem);
  t.def("_str", &Tensor::str);

  // ---- context (MindSpore's set_context / get_context) ----
  m.def("_set_mode", [](int mode) { set_exec_mode(mode == 0 ? ExecMode::kGraph : ExecMode::kEager); });
  m.def("_get_mode", [] { return context().mode == ExecMode::kGraph ? 0 : 1; });
  m.def("_set_device", [](const std::string& d) { set_device(d); });
  m.def("_get_device", [] { return context().device.str(); });
  m.def("_set_precision", [](const std::string& p) { set_precision_mode(precision_mode_from_name(p)); });
  m.def("_get_precision", [] { return std::string(precision_mode_name(context().precision)); });
  m.def("_set_num_threads", [](int n) { set_num_threads(n); });
  m.def("_num_threads", [] { return num_threads(); });
  m.def("_dtype_from", [](py::object d) { return opt_dtype(d); });
  m.def("_norm_axis", &norm_axis);
}

}  // namespace spore::py_bind
