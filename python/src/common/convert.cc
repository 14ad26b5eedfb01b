#include "common/convert.h"

#include <string>

#include "spore/ops.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

// The array's reference, dropped with the GIL held whichever thread frees the storage last.
std::shared_ptr<const void> keep_alive(const py::object& obj) {
  PyObject* p = obj.ptr();
  Py_INCREF(p);
  return std::shared_ptr<const void>(p, [](const void* q) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: nothing to release into
    PyGILState_STATE s = PyGILState_Ensure();
    Py_DECREF((PyObject*)q);
    PyGILState_Release(s);
  });
}

bool native_order(const py::dtype& dt) {
  const char order = py::str(dt.attr("byteorder")).cast<std::string>()[0];
  return order == '=' || order == '|' || (order == '<') == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__);
}

std::string type_name(py::handle h) { return py::str(py::type::handle_of(h).attr("__name__")); }

}  // namespace

std::optional<DType> dtype_from_numpy(const py::dtype& dt) {
  // Read through Python attributes, not pybind11's view of the descriptor struct, whose layout
  // changed in NumPy 2 (pybind11 2.10, Debian's, reads the NumPy 1 layout).
  const char kind = py::str(dt.attr("kind")).cast<std::string>()[0];
  const auto size = dt.attr("itemsize").cast<py::ssize_t>();
  switch (kind) {
    case 'b': return DType::kBool;
    case 'i':
      if (size == 1) return DType::kInt8;
      if (size == 4) return DType::kInt32;
      if (size == 8) return DType::kInt64;
      return std::nullopt;
    case 'u':
      if (size == 1) return DType::kUInt8;
      return std::nullopt;
    case 'f':
      if (size == 2) return DType::kFloat16;
      if (size == 4) return DType::kFloat32;
      if (size == 8) return DType::kFloat64;
      return std::nullopt;
    case 'V':
      if (size == 2 && py::str(dt.attr("name")).cast<std::string>() == "bfloat16") return DType::kBFloat16;
      return std::nullopt;
    default: return std::nullopt;
  }
}

std::optional<py::dtype> numpy_dtype(DType t) {
  switch (t) {
    case DType::kBool: return py::dtype("bool");
    case DType::kInt8: return py::dtype("int8");
    case DType::kUInt8: return py::dtype("uint8");
    case DType::kInt32: return py::dtype("int32");
    case DType::kInt64: return py::dtype("int64");
    case DType::kFloat16: return py::dtype("float16");
    case DType::kFloat32: return py::dtype("float32");
    case DType::kFloat64: return py::dtype("float64");
    case DType::kBFloat16:
      try {
        return py::dtype::from_args(py::module_::import("ml_dtypes").attr("bfloat16"));
      } catch (py::error_already_set&) {
        return std::nullopt;
      }
  }
  return std::nullopt;
}

Tensor tensor_from_array(const py::array& a_in, std::optional<DType> dtype, bool share) {
  py::array a = a_in;
  std::optional<DType> have = dtype_from_numpy(a.dtype());
  if (!have) {
    // A dtype Spore lacks: NumPy converts to the one asked for, or the closest default.
    if (!dtype)
      throw Error(ErrorCode::kDType,
                  "Tensor: NumPy dtype " + std::string(py::str(a.dtype())) +
                      " has no Spore dtype; convert the array with .astype() to bool, int8, uint8, int32, "
                      "int64, float16, float32 or float64 first");
    auto target = numpy_dtype(*dtype == DType::kBFloat16 ? DType::kFloat32 : *dtype);
    a = a.attr("astype")(*target);
    have = dtype_from_numpy(a.dtype());
  }
  std::vector<int64_t> dims(a.shape(), a.shape() + a.ndim());
  const Shape shape(dims);
  const bool contiguous = (a.flags() & py::array::c_style) != 0 && native_order(a.dtype());
  Tensor t;
  if (share && contiguous && a.size() > 0) {
    const bool writable = a.writeable();
    t = Tensor::from_external(const_cast<void*>(a.data()), shape, *have, keep_alive(a), writable);
  } else {
    py::array c = py::array::ensure(a, py::array::c_style | py::array::forcecast);
    if (!native_order(c.dtype())) c = c.attr("astype")(c.dtype().attr("newbyteorder")("="));
    t = Tensor::from_bytes(c.data(), shape, *have, Device::cpu());
  }
  if (dtype && *dtype != *have) t = cast(t, *dtype);
  return t;
}

Tensor tensor_from_object(py::handle data, std::optional<DType> dtype, bool share, const char* what) {
  if (py::isinstance<Tensor>(data)) {
    const Tensor& t = data.cast<const Tensor&>();
    return dtype && *dtype != t.dtype() ? cast(t, *dtype) : t;
  }
  if (py::isinstance<py::array>(data)) return tensor_from_array(py::reinterpret_borrow<py::array>(data), dtype, share);
  py::module_ np = py::module_::import("numpy");
  // Python scalars and (nested) lists: MindSpore's defaults, not NumPy's float64.
  std::optional<DType> fallback;
  if (PyBool_Check(data.ptr())) {
    fallback = DType::kBool;
  } else if (PyFloat_Check(data.ptr())) {
    fallback = DType::kFloat32;
  } else if (PyLong_Check(data.ptr())) {
    fallback = DType::kInt64;
  }
  py::array a;
  try {
    if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
      // Elements may be Tensors (0-d or not): NumPy asks each for __array__.
      a = np.attr("asarray")(data);
    } else if (fallback || py::hasattr(data, "__array__") || py::hasattr(data, "dtype")) {
      a = np.attr("asarray")(data);
    } else {
      throw Error(ErrorCode::kDType, std::string(what) + ": cannot make a tensor from a " + type_name(data) +
                                         "; pass a number, a (nested) list, a NumPy array or a Tensor");
    }
  } catch (py::error_already_set& e) {
    throw Error(ErrorCode::kValue, std::string(what) + ": cannot make a tensor from this " + type_name(data) +
                                       ": " + e.what());
  }
  if (const char k = py::str(a.dtype().attr("kind")).cast<std::string>()[0]; k == 'O' || k == 'U' || k == 'S')
    throw Error(ErrorCode::kShape, std::string(what) + ": the " + type_name(data) +
                                       " is ragged or holds non-numbers (NumPy made an array of dtype " +
                                       std::string(py::str(a.dtype())) + "); every row needs the same length");
  if (!dtype && !py::isinstance<py::array>(data) && !py::hasattr(data, "dtype")) {
    // A list: floats become float32 as MindSpore's Tensor([1.0]) does.
    const char k = py::str(a.dtype().attr("kind")).cast<std::string>()[0];
    if (k == 'f') dtype = DType::kFloat32;
    if (k == 'i' || k == 'u') dtype = DType::kInt64;
    if (fallback) dtype = fallback;
  }
  return tensor_from_array(a, dtype, false);
}

py::array tensor_to_array(const Tensor& t_in) {
  Tensor t = t_in.device() == Device::cpu() ? t_in : t_in.to(Device::cpu());
  std::optional<py::dtype> dt = numpy_dtype(t.dtype());
  if (!dt) {  // bfloat16 without ml_dtypes: an exact float32 copy
    t = cast(t, DType::kFloat32);
    dt = numpy_dtype(DType::kFloat32);
  }
  std::vector<py::ssize_t> shape, strides;
  for (int d = 0; d < t.ndim(); ++d) {
    shape.push_back(t.shape()[d]);
    strides.push_back((py::ssize_t)(t.strides()[d] * (int64_t)t.itemsize()));
  }
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  void* ptr = t.numel() > 0 ? t.data_ptr() : nullptr;
  py::array out(*dt, shape, strides, ptr, base);
  if (!t.storage()->writable()) out.attr("flags").attr("writeable") = false;
  return out;
}

}  // namespace spore::py_bind
