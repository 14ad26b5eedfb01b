// spore.ops: the registry's ops under their MindSpore names (mindspore.ops), with MindSpore's
// argument names and defaults where they differ from the C++ API's (NOTE [Python modules]).
// Long kernels (matmul, convolution, pooling) run with the GIL released. Their tensors are taken
// by value, copied while the GIL is held: the call owns a reference to every input for its whole
// duration, whatever another Python thread does meanwhile to the objects it was passed (such as
// Parameter.set_data, which rebinds the tensor inside the Python object).
#include <pybind11/stl.h>

#include "common/convert.h"
#include "spore/bindings.h"
#include "spore/llm.h"
#include "spore/nn/losses.h"
#include "spore/ops.h"

namespace py = pybind11;

namespace spore::py_bind {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// An operand that may be a Python number (taking the other tensor's dtype, as C++'s scalar forms).
Tensor arg(py::handle h, const Tensor* like, const char* op) {
  if (py::isinstance<Tensor>(h)) return h.cast<Tensor>();
  if (like && (PyFloat_Check(h.ptr()) || PyLong_Check(h.ptr()))) return scalar_like(*like, h.cast<double>());
  return tensor_from_object(h, std::nullopt, false, op);
}

template <Tensor (*F)(const Tensor&, const Tensor&)>
void binary(py::module_& m, const char* name, const char* a = "input", const char* b = "other") {
  m.def(name, [](const Tensor& x, const Tensor& y) { return F(x, y); }, py::arg(a), py::arg(b));
  m.def(name, [name](py::object x, py::object y) {
    const bool xt = py::isinstance<Tensor>(x), yt = py::isinstance<Tensor>(y);
    Tensor tx, ty;
    if (xt) {
      tx = x.cast<Tensor>();
      ty = arg(y, &tx, name);
    } else if (yt) {
      ty = y.cast<Tensor>();
      tx = arg(x, &ty, name);
    } else {
      tx = arg(x, nullptr, name);
      ty = arg(y, &tx, name);
    }
    return F(tx, ty);
  }, py::arg(a), py::arg(b));
}

std::vector<int64_t> axes_of(py::handle h) {
  if (h.is_none()) return {};
  if (PyLong_Check(h.ptr())) return {h.cast<int64_t>()};
  return h.cast<std::vector<int64_t>>();
}

std::vector<int64_t> pair_of(py::handle h, const char* what) {
  if (PyLong_Check(h.ptr())) return {h.cast<int64_t>(), h.cast<int64_t>()};
  auto v = h.cast<std::vector<int64_t>>();
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) throw Error(ErrorCode::kValue, std::string(what) + " needs one value or (height, width)");
  return v;
}

DType dtype_or(py::handle h, DType d) {
  if (h.is_none()) return d;
  return py::module_::import("spore._spore").attr("_dtype_from")(h).cast<DType>();
}

Pool2dOptions pool_options(py::handle kernel, py::handle stride, py::handle padding, bool ceil) {
  Pool2dOptions o;
  o.kernel = pair_of(kernel, "kernel_size");
  o.stride = stride.is_none() ? o.kernel : pair_of(stride, "stride");
  o.padding = pair_of(padding, "padding");
  o.ceil_mode = ceil;
  return o;
}

}  // namespace

void bind_ops(py::module_& root) {
  py::module_ m = root.def_submodule("ops", "MindSpore's functional ops over Spore's registry");
  // elementwise binary
  binary<add>(m, "add");
  binary<sub>(m, "sub");
  binary<sub>(m, "subtract");
  binary<mul>(m, "mul");
  binary<mul>(m, "multiply");
  binary<div>(m, "div");
  binary<div>(m, "divide");
  binary<pow>(m, "pow", "input", "exponent");
  binary<maximum>(m, "maximum");
  binary<minimum>(m, "minimum");
  binary<eq>(m, "equal");
  binary<eq>(m, "eq");
  binary<ne>(m, "not_equal");
  binary<ne>(m, "ne");
  binary<lt>(m, "less");
  binary<lt>(m, "lt");
  binary<le>(m, "less_equal");
  binary<le>(m, "le");
  binary<gt>(m, "greater");
  binary<gt>(m, "gt");
  binary<ge>(m, "greater_equal");
  binary<ge>(m, "ge");
  binary<logical_and>(m, "logical_and");
  binary<logical_or>(m, "logical_or");
  // elementwise unary
#define SPORE_PY_UNARY(name, fn) m.def(name, [](const Tensor& x) { return fn(x); }, py::arg("input"));
  SPORE_PY_UNARY("neg", neg)
  SPORE_PY_UNARY("negative", neg)
  SPORE_PY_UNARY("abs", abs)
  SPORE_PY_UNARY("exp", exp)
  SPORE_PY_UNARY("log", log)
  SPORE_PY_UNARY("sqrt", sqrt)
  SPORE_PY_UNARY("rsqrt", rsqrt)
  SPORE_PY_UNARY("sin", sin)
  SPORE_PY_UNARY("cos", cos)
  SPORE_PY_UNARY("tanh", tanh)
  SPORE_PY_UNARY("sigmoid", sigmoid)
  SPORE_PY_UNARY("erf", erf)
  SPORE_PY_UNARY("relu", relu)
  SPORE_PY_UNARY("relu6", relu6)
  SPORE_PY_UNARY("silu", silu)
  SPORE_PY_UNARY("logical_not", logical_not)
  SPORE_PY_UNARY("square", [](const Tensor& x) { return mul(x, x); })
#undef SPORE_PY_UNARY
  m.def("gelu", [](const Tensor& x, const std::string& approximate) {
    if (approximate != "none" && approximate != "tanh")
      throw Error(ErrorCode::kValue, "gelu: approximate must be 'none' or 'tanh', got '" + approximate + "'");
    return gelu(x, approximate == "tanh");
  }, py::arg("input"), py::arg("approximate") = "none");
  m.def("where", [](py::object c, py::object x, py::object y) {
    Tensor tc = arg(c, nullptr, "where");
    Tensor tx = py::isinstance<Tensor>(x) ? x.cast<Tensor>() : Tensor();
    Tensor ty = py::isinstance<Tensor>(y) ? y.cast<Tensor>() : Tensor();
    if (!tx.defined()) tx = arg(x, ty.defined() ? &ty : nullptr, "where");
    if (!ty.defined()) ty = arg(y, &tx, "where");
    return where(tc, tx, ty);
  }, py::arg("condition"), py::arg("x"), py::arg("y"));
  m.def("cast", [](const Tensor& x, py::object d) { return cast(x, dtype_or(d, x.dtype())); },
        py::arg("input"), py::arg("dtype"));
  // reductions
  m.def("sum", [](const Tensor& x, py::object dim, bool keep) { return sum(x, axes_of(dim), keep); },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("reduce_sum", [](const Tensor& x, py::object axis, bool keep) { return sum(x, axes_of(axis), keep); },
        py::arg("input"), py::arg("axis") = py::none(), py::arg("keep_dims") = false);
  m.def("mean", [](const Tensor& x, py::object axis, bool keep) { return mean(x, axes_of(axis), keep); },
        py::arg("input"), py::arg("axis") = py::none(), py::arg("keep_dims") = false);
  m.def("amax", [](const Tensor& x, py::object axis, bool keep) { return max(x, axes_of(axis), keep); },
        py::arg("input"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  m.def("amin", [](const Tensor& x, py::object axis, bool keep) { return min(x, axes_of(axis), keep); },
        py::arg("input"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  // MindSpore 2.x: ops.max/min return (values, indices).
  m.def("max", [](const Tensor& x, std::optional<int64_t> axis, bool keep) {
    std::vector<int64_t> axes;
    if (axis) axes.push_back(*axis);
    return py::make_tuple(max(x, axes, keep), argmax(x, axis, keep));
  }, py::arg("input"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  m.def("min", [](const Tensor& x, std::optional<int64_t> axis, bool keep) {
    std::vector<int64_t> axes;
    if (axis) axes.push_back(*axis);
    return py::make_tuple(min(x, axes, keep), argmin(x, axis, keep));
  }, py::arg("input"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  m.def("var", [](const Tensor& x, py::object axis, int64_t ddof, bool keep) {
    return var(x, axes_of(axis), ddof, keep);
  }, py::arg("input"), py::arg("axis") = py::none(), py::arg("ddof") = 0, py::arg("keepdims") = false);
  m.def("argmax", [](const Tensor& x, std::optional<int64_t> dim, bool keep) { return argmax(x, dim, keep); },
        py::arg("input"), py::arg("dim") = py::none(), py::arg("keepdim") = false);
  m.def("argmin", [](const Tensor& x, std::optional<int64_t> axis, bool keep) { return argmin(x, axis, keep); },
        py::arg("input"), py::arg("axis") = py::none(), py::arg("keepdims") = false);
  // linear algebra
  m.def("matmul", [](Tensor a, Tensor b) { return matmul(a, b); }, py::arg("input"),
        py::arg("other"), Release());
  // shapes and views
  m.def("reshape", [](const Tensor& x, std::vector<int64_t> s) { return reshape(x, s); }, py::arg("input"),
        py::arg("shape"));
  m.def("flatten", [](const Tensor& x, const std::string& order, int64_t s, int64_t e) {
    if (order != "C") throw Error(ErrorCode::kUnsupported, "flatten: only order 'C' is supported");
    return flatten(x, s, e);
  }, py::arg("input"), py::arg("order") = "C", py::kw_only(), py::arg("start_dim") = 1, py::arg("end_dim") = -1);
  m.def("permute", [](const Tensor& x, std::vector<int64_t> a) { return permute(x, a); }, py::arg("input"),
        py::arg("axis"));
  m.def("transpose", [](const Tensor& x, std::vector<int64_t> a) { return permute(x, a); }, py::arg("input"),
        py::arg("input_perm"));
  m.def("swapaxes", [](const Tensor& x, int64_t a, int64_t b) { return transpose(x, a, b); }, py::arg("input"),
        py::arg("axis0"), py::arg("axis1"));
  m.def("squeeze", [](const Tensor& x, std::optional<int64_t> a) { return squeeze(x, a); }, py::arg("input"),
        py::arg("axis") = py::none());
  m.def("unsqueeze", [](const Tensor& x, int64_t d) { return unsqueeze(x, d); }, py::arg("input"), py::arg("dim"));
  m.def("expand_dims", [](const Tensor& x, int64_t d) { return unsqueeze(x, d); }, py::arg("input_x"),
        py::arg("axis"));
  m.def("broadcast_to", [](const Tensor& x, std::vector<int64_t> s) { return expand(x, s); }, py::arg("input"),
        py::arg("shape"));
  m.def("concat", [](std::vector<Tensor> xs, int64_t a) { return concat(xs, a); }, py::arg("tensors"),
        py::arg("axis") = 0);
  m.def("cat", [](std::vector<Tensor> xs, int64_t a) { return concat(xs, a); }, py::arg("tensors"),
        py::arg("axis") = 0);
  m.def("stack", [](std::vector<Tensor> xs, int64_t a) { return stack(xs, a); }, py::arg("tensors"),
        py::arg("axis") = 0);
  m.def("split", [](const Tensor& x, py::object size, int64_t axis) {
    std::vector<int64_t> sizes;
    if (PyLong_Check(size.ptr())) {
      const int64_t each = size.cast<int64_t>(), n = x.shape()[(int)(axis < 0 ? axis + x.ndim() : axis)];
      if (each <= 0) throw Error(ErrorCode::kValue, "split: split_size_or_sections must be positive");
      for (int64_t at = 0; at < n; at += each) sizes.push_back(std::min(each, n - at));
    } else {
      sizes = size.cast<std::vector<int64_t>>();
    }
    return py::tuple(py::cast(split(x, sizes, axis)));
  }, py::arg("tensor"), py::arg("split_size_or_sections"), py::arg("axis") = 0);
  m.def("chunk", [](const Tensor& x, int64_t n, int64_t a) { return py::tuple(py::cast(chunk(x, n, a))); },
        py::arg("input"), py::arg("chunks"), py::arg("axis") = 0);
  m.def("slice", [](const Tensor& x, std::vector<int64_t> begin, std::vector<int64_t> size) {
    if ((int)begin.size() != x.ndim() || (int)size.size() != x.ndim())
      throw Error(ErrorCode::kValue, "slice: begin and size need one value per dimension of shape " +
                                         x.shape().str());
    Tensor r = x;
    for (int d = 0; d < x.ndim(); ++d) {
      const int64_t end = size[d] == -1 ? x.shape()[d] : begin[d] + size[d];
      r = slice(r, d, begin[d], end);
    }
    return r;
  }, py::arg("input_x"), py::arg("begin"), py::arg("size"));
  m.def("slice_scatter", [](const Tensor& x, const Tensor& src, int64_t axis, std::optional<int64_t> start,
                            std::optional<int64_t> end, int64_t step) {
    const int64_t n = x.shape()[(int)(axis < 0 ? axis + x.ndim() : axis)];
    return slice_scatter(x, src, axis, start.value_or(0), end.value_or(n), step);
  }, py::arg("input"), py::arg("src"), py::arg("axis") = 0, py::arg("start") = py::none(),
     py::arg("end") = py::none(), py::arg("step") = 1);
  // in place: variable = value (the registry's assign op), returns variable
  m.def("assign", [](const Tensor& variable, const Tensor& value) {
    variable.copy_(value);
    return variable;
  }, py::arg("variable"), py::arg("value"));
  m.def("rms_norm", [](const Tensor& x, const Tensor& gamma, double eps) { return rms_norm(x, gamma, eps); },
        py::arg("x"), py::arg("gamma"), py::arg("epsilon") = 1e-6);
  // indexing
  m.def("gather", [](const Tensor& x, const Tensor& idx, int64_t axis) { return index_select(x, axis, idx); },
        py::arg("input_params"), py::arg("input_indices"), py::arg("axis"));
  m.def("index_select", [](const Tensor& x, int64_t axis, const Tensor& idx) { return index_select(x, axis, idx); },
        py::arg("input"), py::arg("axis"), py::arg("index"));
  m.def("gather_elements", [](const Tensor& x, int64_t dim, const Tensor& idx) { return gather(x, dim, idx); },
        py::arg("input"), py::arg("dim"), py::arg("index"));
  m.def("embedding", [](const Tensor& ids, const Tensor& table) { return embedding(ids, table); },
        py::arg("input"), py::arg("weight"));
  m.def("tensor_scatter_elements", [](const Tensor& x, const Tensor& idx, const Tensor& src, int64_t axis,
                                      const std::string& reduction) {
    if (reduction != "add")
      throw Error(ErrorCode::kUnsupported, "tensor_scatter_elements: only reduction='add' is supported");
    return scatter_add(x, axis, idx, src);
  }, py::arg("input_x"), py::arg("indices"), py::arg("updates"), py::arg("axis") = 0, py::arg("reduction") = "add");
  // convolution and pooling (NCHW)
  m.def("conv2d", [](Tensor x, Tensor w, std::optional<Tensor> bias, py::object stride,
                     const std::string& pad_mode, py::object padding, py::object dilation, int64_t groups) {
    Conv2dOptions o;
    o.stride = pair_of(stride, "stride");
    o.dilation = pair_of(dilation, "dilation");
    o.groups = groups;
    if (pad_mode == "valid") {
      o.padding = {0, 0};
    } else if (pad_mode == "pad") {
      o.padding = pair_of(padding, "padding");
    } else {
      throw Error(ErrorCode::kUnsupported, "conv2d: pad_mode '" + pad_mode +
                                               "' is not supported here; use 'valid' or 'pad' (nn.Conv2d has 'same')");
    }
    py::gil_scoped_release nogil;
    Tensor y = conv2d(x, w, o);
    if (bias) y = add(y, reshape(*bias, {1, -1, 1, 1}));
    return y;
  }, py::arg("input"), py::arg("weight"), py::arg("bias") = py::none(), py::arg("stride") = 1,
     py::arg("pad_mode") = "valid", py::arg("padding") = 0, py::arg("dilation") = 1, py::arg("groups") = 1);
  m.def("max_pool2d", [](Tensor x, py::object k, py::object s, py::object p, bool ceil) {
    Pool2dOptions o = pool_options(k, s, p, ceil);
    py::gil_scoped_release nogil;
    return max_pool2d(x, o);
  }, py::arg("x"), py::arg("kernel_size"), py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("ceil_mode") = false);
  m.def("avg_pool2d", [](Tensor x, py::object k, py::object s, py::object p, bool ceil) {
    Pool2dOptions o = pool_options(k, s, p, ceil);
    py::gil_scoped_release nogil;
    return avg_pool2d(x, o);
  }, py::arg("input_x"), py::arg("kernel_size") = 1, py::arg("stride") = py::none(), py::arg("padding") = 0,
     py::arg("ceil_mode") = false);
  m.def("adaptive_avg_pool2d", [](const Tensor& x, py::object size) {
    return adaptive_avg_pool2d(x, pair_of(size, "output_size"));
  }, py::arg("input"), py::arg("output_size"));
  // normalisation
  m.def("softmax", [](const Tensor& x, int64_t a) { return softmax(x, a); }, py::arg("input"), py::arg("axis") = -1);
  m.def("log_softmax", [](const Tensor& x, int64_t a) { return log_softmax(x, a); }, py::arg("logits"),
        py::arg("axis") = -1);
  // creation
  m.def("zeros", [](std::vector<int64_t> s, py::object d) { return zeros(s, dtype_or(d, DType::kFloat32)); },
        py::arg("size"), py::arg("dtype") = py::none());
  m.def("ones", [](std::vector<int64_t> s, py::object d) { return ones(s, dtype_or(d, DType::kFloat32)); },
        py::arg("size"), py::arg("dtype") = py::none());
  m.def("full", [](std::vector<int64_t> s, double v, py::object d) { return full(s, v, dtype_or(d, DType::kFloat32)); },
        py::arg("size"), py::arg("fill_value"), py::kw_only(), py::arg("dtype") = py::none());
  m.def("fill", [](py::object d, std::vector<int64_t> s, double v) { return full(s, v, dtype_or(d, DType::kFloat32)); },
        py::arg("type"), py::arg("shape"), py::arg("value"));
  m.def("zeros_like", [](const Tensor& x) { return zeros_like(x); }, py::arg("input"));
  m.def("ones_like", [](const Tensor& x) { return ones_like(x); }, py::arg("input"));
  m.def("arange", [](double start, std::optional<double> end, double step, py::object d) {
    if (!end) {
      end = start;
      start = 0;
    }
    return arange(start, *end, step, dtype_or(d, DType::kInt64));
  }, py::arg("start") = 0, py::arg("end") = py::none(), py::arg("step") = 1, py::kw_only(),
     py::arg("dtype") = py::none());
  m.def("uniform", [](std::vector<int64_t> s, double lo, double hi, uint64_t seed, py::object d) {
    return random_uniform(s, seed, lo, hi, dtype_or(d, DType::kFloat32));
  }, py::arg("shape"), py::arg("minval") = 0.0, py::arg("maxval") = 1.0, py::arg("seed") = 0,
     py::arg("dtype") = py::none());
  m.def("normal", [](std::vector<int64_t> s, double mean, double stddev, uint64_t seed, py::object d) {
    return random_normal(s, seed, mean, stddev, dtype_or(d, DType::kFloat32));
  }, py::arg("shape"), py::arg("mean") = 0.0, py::arg("stddev") = 1.0, py::arg("seed") = 0,
     py::arg("dtype") = py::none());
  m.def("standard_normal", [](std::vector<int64_t> s, uint64_t seed) { return random_normal(s, seed); },
        py::arg("shape"), py::arg("seed") = 0);
  // losses (mindspore.ops spelling)
  m.def("mse_loss", [](const Tensor& x, const Tensor& y, const std::string& r) { return nn::mse_loss(x, y, r); },
        py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def("l1_loss", [](const Tensor& x, const Tensor& y, const std::string& r) { return nn::l1_loss(x, y, r); },
        py::arg("input"), py::arg("target"), py::arg("reduction") = "mean");
  m.def("cross_entropy", [](const Tensor& x, const Tensor& y, py::object weight, int64_t ignore,
                            const std::string& r, double ls) {
    if (!weight.is_none()) throw Error(ErrorCode::kUnsupported, "cross_entropy: class weights are not supported");
    return nn::cross_entropy(x, y, r, ls, ignore);
  }, py::arg("input"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
     py::arg("reduction") = "mean", py::arg("label_smoothing") = 0.0);
  m.def("nll_loss", [](const Tensor& x, const Tensor& y, py::object weight, int64_t ignore, const std::string& r) {
    if (!weight.is_none()) throw Error(ErrorCode::kUnsupported, "nll_loss: class weights are not supported");
    return nn::nll_loss(x, y, r, ignore);
  }, py::arg("inputs"), py::arg("target"), py::arg("weight") = py::none(), py::arg("ignore_index") = -100,
     py::arg("reduction") = "mean");
  m.def("binary_cross_entropy_with_logits", [](const Tensor& x, const Tensor& y, py::object w, py::object pw,
                                               const std::string& r) {
    if (!w.is_none() || !pw.is_none())
      throw Error(ErrorCode::kUnsupported, "binary_cross_entropy_with_logits: weight/pos_weight are not supported");
    return nn::binary_cross_entropy_with_logits(x, y, r);
  }, py::arg("logits"), py::arg("label"), py::arg("weight") = py::none(), py::arg("pos_weight") = py::none(),
     py::arg("reduction") = "mean");
}

}  // namespace spore::py_bind
