// ONNX in (NOTE [ONNX]): a ModelProto mapped node by node onto registry ops, into Spore's IR
// model, which Lite's executor then plans and runs like any Spore IR file.
//
// The mapping needs shapes (Flatten, Reshape's 0, Gather's index rank, Expand's bidirectional
// broadcast), so it runs the registry's own shape inference as it goes, on placeholder tensors
// (one element broadcast to the shape: no memory of the shape's size). A graph with symbolic
// input dimensions is never mapped from made-up extents: read_onnx refuses it with
// InputValueNeeded after checking its ops, and Lite maps it at predict from the real inputs
// (NOTE [ONNX dynamic shapes]).
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include "lite/import_graph.h"
#include "lite/onnx_mapper.h"
#include "spore/error.h"
#include "spore/onnx.h"
#include "spore/ops.h"

namespace spore::onnx {
namespace detail {

// ONNX TensorProto.DataType -> Spore's dtype; false when Spore has none.
bool dtype_of(int32_t t, DType& out) {
  switch (t) {
    case TensorProto::FLOAT: out = DType::kFloat32; return true;
    case TensorProto::DOUBLE: out = DType::kFloat64; return true;
    case TensorProto::FLOAT16: out = DType::kFloat16; return true;
    case TensorProto::BFLOAT16: out = DType::kBFloat16; return true;
    case TensorProto::INT8: out = DType::kInt8; return true;
    case TensorProto::UINT8: out = DType::kUInt8; return true;
    case TensorProto::INT32: out = DType::kInt32; return true;
    case TensorProto::INT64: out = DType::kInt64; return true;
    case TensorProto::BOOL: out = DType::kBool; return true;
    default: return false;
  }
}

std::string onnx_type_name(int32_t t) {
  if (const Carried* ct = carried_type(t); ct && !TensorProto::DataType_IsValid(t)) return ct->name;  // newer than libonnx's names
  return TensorProto::DataType_IsValid(t) ? TensorProto::DataType_Name((TensorProto::DataType)t) : "type " + std::to_string(t);
}

int64_t checked_numel(const std::vector<int64_t>& dims, const std::string& what) {
  return lite::checked_numel(dims, what, [&](int64_t d) { fail(ErrorCode::kFormat, what + " has a negative extent " + std::to_string(d)); });
}

// A TensorProto (an initializer or a Constant's value) as a CPU tensor, its data copied out.
Tensor tensor_of(const TensorProto& t, const std::string& what) {
  DType dtype;
  if (!dtype_of(t.data_type(), dtype))
    fail(ErrorCode::kUnsupported, what + " has dtype " + onnx_type_name(t.data_type()) + ", which Spore has no dtype for");
  if (t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0)
    fail(ErrorCode::kUnsupported, what + " keeps its data in an external file; save the model with its data inside "
                                         "(onnx.save_model(m, path, save_as_external_data=False))");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  const int64_t n = checked_numel(dims, what);
  const size_t bytes = (size_t)n * dtype_size(dtype);
  // The data present must match the shape before anything is allocated: a hostile file may
  // declare a huge shape and carry no data (the onnx fuzz target found that).
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      fail(ErrorCode::kFormat, what + " holds " + std::to_string(t.raw_data().size()) + " bytes of raw data; its shape and dtype need " +
                                   std::to_string(bytes));
  } else {
    const int64_t held = dtype == DType::kFloat32   ? t.float_data_size()
                         : dtype == DType::kFloat64 ? t.double_data_size()
                         : dtype == DType::kInt64   ? t.int64_data_size()
                                                    : t.int32_data_size();
    if (held != n)
      fail(ErrorCode::kFormat, what + " holds " + std::to_string(held) + " values for its shape of " + std::to_string(n) + " elements");
  }
  Tensor out = Tensor::empty(Shape(dims), dtype, Device::cpu());
  uint8_t* dst = static_cast<uint8_t*>(out.data_ptr());
  if (t.has_raw_data()) {
    if (bytes) std::memcpy(dst, t.raw_data().data(), bytes);
    return out;
  }
  switch (dtype) {
    case DType::kFloat32:
      if (bytes) std::memcpy(dst, t.float_data().data(), bytes);
      break;
    case DType::kFloat64:
      if (bytes) std::memcpy(dst, t.double_data().data(), bytes);
      break;
    case DType::kInt64:
      if (bytes) std::memcpy(dst, t.int64_data().data(), bytes);
      break;
    default: {  // int32_data carries int32, int8, uint8, bool, and the bits of float16/bfloat16
      const size_t size = dtype_size(dtype);
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t v = (uint32_t)t.int32_data((int)i);
        std::memcpy(dst + i * size, &v, size);  // little-endian: the low bytes
      }
    }
  }
  return out;
}

// ---- attributes -------------------------------------------------------------------------------
const AttributeProto* find_attr(const NodeProto& n, const std::string& name) {
  for (const AttributeProto& a : n.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}



std::vector<uint32_t> Mapper::emit_all(const NodeCtx& c, OpId op, const std::vector<uint32_t>& ins, const Attrs& attrs) {
  const OpDef& def = op_def(op);
  const std::vector<Tensor> ts = probes(ins);
  const Inference inf = infer(c.where, def, ts, attrs);
  // Small results of constants and initializers are computed now (the registry's eager kernels,
  // the same the executor would run), so that the mapping sees their values: a Range's limit
  // from a Size, an axes input made by a Constant and a Sub, a shape gathered from a Shape.
  const bool small = def.writes_mask == 0 && inf.num_outputs == 1 && inf.outputs[0].shape.numel() <= kMaxKnownElements;
  bool foldable = small, computable = small;
  for (uint32_t id : ins) {
    foldable = foldable && is_constant(id);
    computable = computable && !unknowable.count(id) &&
                 (is_constant(id) || g.values[id].kind == ir::ValueKind::kInput || known.count(id) || derivable.count(id));
  }
  if (foldable) {
    try {
      return {constant(dispatch1(op, ts, attrs).contiguous())};
    } catch (const Error& e) {
      fail(e.code(), c.where + " (mapped onto " + def.name + "): " + e.what());
    }
  }
  // A hostile Range or ConstantOfShape must not become an allocation Lite attempts.
  std::vector<uint32_t> out = add_node(c.where, def, ins, attrs, inf, inf.num_outputs);
  // What is computed from a value only the run knows is such a value too (reading it names why);
  // its value at a Loop's entry is computed when its inputs' are known (hints).
  for (uint32_t id : ins)
    if (unknowable.count(id)) {
      unknowable.insert(out.begin(), out.end());
      std::vector<Tensor> entry;
      for (uint32_t in : ins)
        if (const Tensor* h = hinted(in)) entry.push_back(*h);
      if (small && entry.size() == ins.size() && !hints.empty()) {
        try {
          hints[out[0]] = dispatch1(op, entry, attrs).contiguous();
        } catch (const Error&) {
          // no entry value: a per-iteration Slice or Range reading it is refused by name
        }
      }
      break;
    }
  if (!computable) return out;
  // Computed from the inputs: known now when predict gave them, else known then
  // (NOTE [ONNX dynamic shapes]).
  std::vector<Tensor> values;
  std::set<std::string> from;
  for (uint32_t id : ins) {
    const ir::Value& v = g.values[id];
    if (is_constant(id)) {
      values.push_back(v.data);
    } else if (v.kind == ir::ValueKind::kInput && v.data.defined()) {
      values.push_back(v.data);
      from.insert(v.name);
    } else if (auto k = known.find(id); k != known.end()) {
      values.push_back(k->second.first);
      from.insert(k->second.second.begin(), k->second.second.end());
    } else {
      derivable.insert(out[0]);
      return out;
    }
  }
  try {
    known[out[0]] = {dispatch1(op, values, attrs).contiguous(), std::move(from)};
  } catch (const Error&) {
    // The executor reports it when it runs the node; the mapping only misses the value.
  }
  return out;
}

// ---- the mapping table ----------------------------------------------------------------------
// Elementwise ops keep ONNX's result dtype: a registry op that promotes (pow of int by float)
// is cast back to the first input's dtype.
Handler binary(OpId op, bool keep_dtype = true) {
  return [op, keep_dtype](NodeCtx& c) {
    uint32_t y = c.m.emit(c, op, {c.at(0), c.at(1)});
    if (keep_dtype) y = c.m.cast_to(c, y, c.m.dtype(c.at(0)));
    return std::vector<uint32_t>{y};
  };
}
Handler unary(OpId op) {
  return [op](NodeCtx& c) { return std::vector<uint32_t>{c.m.emit(c, op, {c.at(0)})}; };
}
// An op the registry row maps one to one (NOTE [Op facts]): its operands in order; arithmetic
// keeps the first operand's dtype (ONNX's ops take one dtype where the registry promotes).
Handler one_to_one(const OpDef& def) {
  const int arity = def.facts.fusion == Fusion::kNone ? def.num_inputs : fusion_arity(def.facts.fusion);
  if (arity == 1) return unary(def.id);
  if (arity == 2) return binary(def.id, def.facts.fusion == Fusion::kArith);
  return [op = def.id, arity](NodeCtx& c) {
    std::vector<uint32_t> ins;
    for (int k = 0; k < arity; ++k) ins.push_back(c.at(k));
    return std::vector<uint32_t>{c.m.emit(c, op, ins)};
  };
}
// Sum, Max, Min, Mean: a left fold over any number of inputs.
Handler variadic(OpId op, bool mean = false) {
  return [op, mean](NodeCtx& c) {
    uint32_t y = c.at(0);
    for (size_t k = 1; k < c.in.size(); ++k) y = c.m.emit(c, op, {y, c.at(k)});
    if (c.in.size() == 1) y = c.m.emit(c, OpId::k_copy, {y});
    if (mean) y = c.m.emit(c, OpId::k_div, {y, c.m.scalar((double)c.in.size(), c.m.dtype(y))});
    return std::vector<uint32_t>{y};
  };
}

std::vector<int64_t> reduce_axes_of(NodeCtx& c, bool axes_from_input) {
  if (axes_from_input) return c.given(1) ? c.m.int_data(c, c.in[1], "axes") : std::vector<int64_t>{};
  return c.ints("axes");
}
// ReduceSum takes its axes as an input from op-set 13, the others from op-set 18.
Handler reduce(OpId op, int64_t axes_input_from, bool square = false) {
  return [=](NodeCtx& c) {
    const bool from_input = c.m.opset >= axes_input_from;
    std::vector<int64_t> axes = reduce_axes_of(c, from_input);
    const bool keepdims = c.i("keepdims", 1) != 0;
    uint32_t x = c.at(0);
    if (square) x = c.m.emit(c, OpId::k_mul, {x, x});
    if (axes.empty() && c.i("noop_with_empty_axes", 0) != 0) return std::vector<uint32_t>{c.m.emit(c, OpId::k_copy, {x})};
    if (axes.empty() && c.m.shape(x).ndim() == 0) return std::vector<uint32_t>{c.m.emit(c, OpId::k_copy, {x})};
    if ((op == OpId::k_max || op == OpId::k_min) && c.m.shape(x).numel() == 0) {
      // ONNX's max / min of an empty set is the identity (-inf / +inf, false / true), where the
      // registry refuses; the result's shape is what a sum would give.
      const DType t = c.m.dtype(x);
      const bool max = op == OpId::k_max;
      double identity;
      if (t == DType::kBool) identity = max ? 0 : 1;
      else if (is_floating(t)) identity = max ? -INFINITY : INFINITY;
      else c.unsupported("the max or min of an empty integer tensor");
      const uint32_t shaped = c.m.emit(c, OpId::k_sum, {c.m.cast_to(c, x, DType::kFloat32)}, Attrs::of(axes, keepdims));
      const Shape& s = c.m.shape(shaped);
      return std::vector<uint32_t>{c.m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>(s.begin(), s.end()), identity, t))};
    }
    return std::vector<uint32_t>{c.m.emit(c, op, {x}, Attrs::of(axes, keepdims))};
  };
}
Handler arg_reduce(OpId op) {
  return [op](NodeCtx& c) {
    const uint32_t x = c.at(0);
    const bool keepdims = c.i("keepdims", 1) != 0;
    if (c.i("select_last_index", 0) == 0) return std::vector<uint32_t>{c.m.emit(c, op, {x}, Attrs::of(c.i("axis", 0), keepdims))};
    // The last index of the extreme value: the largest position along the axis where x equals it.
    const Shape& s = c.m.shape(x);
    if (s.ndim() == 0) c.bad("ArgMax/ArgMin of a 0-d input");
    const int axis = normalize_axis(c, c.i("axis", 0), s.ndim());
    const uint32_t extreme = c.m.emit(c, op == OpId::k_argmax ? OpId::k_max : OpId::k_min, {x},
                                      Attrs::of(std::vector<int64_t>{axis}, true));
    std::vector<int64_t> pos_shape(s.ndim(), 1), pos((size_t)s[axis]);
    pos_shape[axis] = s[axis];
    for (size_t i = 0; i < pos.size(); ++i) pos[i] = (int64_t)i;
    const uint32_t candidates = c.m.emit(c, OpId::k_where, {c.m.emit(c, OpId::k_eq, {x, extreme}), c.m.constant_of(pos, Shape(pos_shape)),
                                                            c.m.scalar(-1, DType::kInt64)});
    return std::vector<uint32_t>{c.m.emit(c, OpId::k_max, {candidates}, Attrs::of(std::vector<int64_t>{axis}, keepdims))};
  };
}

// The spatial axes 2 .. rank-1 of [N, C, D1, ...]: at least one.
std::vector<int64_t> spatial_axes(NodeCtx& c, uint32_t x) {
  const int rank = c.m.shape(x).ndim();
  if (rank < 3) c.bad("the input has rank " + std::to_string(rank) + "; it needs [N, C] and at least one spatial axis");
  std::vector<int64_t> axes;
  for (int d = 2; d < rank; ++d) axes.push_back(d);
  return axes;
}

// Negative indices count from the end in ONNX; the registry's index ops take them in range.
uint32_t wrap_indices(NodeCtx& c, uint32_t index, int64_t extent) {
  const DType t = c.m.dtype(index);
  const uint32_t zero = c.m.scalar(0, t), n = c.m.scalar((double)extent, t);
  const uint32_t negative = c.m.emit(c, OpId::k_lt, {index, zero});
  return c.m.emit(c, OpId::k_where, {negative, c.m.emit(c, OpId::k_add, {index, n}), index});
}

// Conv and pool padding as [top, left, bottom, right] (`pads`, already 2-D): the attribute, or
// auto_pad SAME_* (the odd cell at the end for UPPER, at the start for LOWER) or VALID.
std::vector<int64_t> resolve_pads(NodeCtx& c, const Shape& x, const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations, const std::vector<int64_t>& pads) {
  const std::string auto_pad = c.s("auto_pad", "NOTSET");
  if (auto_pad == "VALID") return {0, 0, 0, 0};
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
    std::vector<int64_t> out(4);
    for (int d = 0; d < 2; ++d) {
      const int64_t in = x[2 + d], s = strides[d], k = (kernel[d] - 1) * dilations[d] + 1;
      if (s <= 0) c.bad("a stride <= 0");
      const int64_t o = (in + s - 1) / s;
      const int64_t total = std::max<int64_t>(0, (o - 1) * s + k - in);
      out[d] = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      out[d + 2] = total - out[d];
    }
    return out;
  }
  if (auto_pad != "NOTSET") c.bad("auto_pad '" + auto_pad + "' is not an ONNX value");
  for (int64_t p : pads)
    if (p < 0) c.bad("a negative pad");
  return pads;
}

// x with `begin` and `end` cells of `value` added along `axis` (negative: cells cut off).
uint32_t pad_axis(NodeCtx& c, uint32_t x, int axis, int64_t begin, int64_t end, double value) {
  if (begin < 0 || end < 0) {
    const int64_t n = c.m.shape(x)[axis];
    x = c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, std::max<int64_t>(0, -begin), n - std::max<int64_t>(0, -end), int64_t{1}));
  }
  std::vector<uint32_t> parts;
  auto block = [&](int64_t extent) {
    const Shape& s = c.m.shape(x);
    std::vector<int64_t> shape(s.begin(), s.end());
    shape[axis] = extent;
    checked_numel(shape, c.where + " padding");
    return c.m.emit(c, OpId::k_fill, {}, Attrs::of(shape, value, c.m.dtype(x)));
  };
  if (begin > 0) parts.push_back(block(begin));
  parts.push_back(x);
  if (end > 0) parts.push_back(block(end));
  return parts.size() > 1 ? c.m.emit(c, OpId::k_concat, parts, Attrs::of((int64_t)axis)) : x;
}

// The registry's conv and pool pad symmetrically; other padding is added explicitly first.
uint32_t pad_spatial(NodeCtx& c, uint32_t x, const std::vector<int64_t>& pads, double value) {
  x = pad_axis(c, x, 2, pads[0], pads[2], value);
  return pad_axis(c, x, 3, pads[1], pads[3], value);
}


std::vector<uint32_t> conv(NodeCtx& c) {
  const Spatial sp(c, c.at(0));
  const uint32_t x = sp.in(c.at(0));
  if (c.m.shape(c.at(1)).ndim() != c.m.shape(c.at(0)).ndim()) c.bad("the weight's rank differs from the input's");
  const uint32_t w = sp.in(c.at(1));
  std::vector<int64_t> kernel = {c.m.shape(w)[2], c.m.shape(w)[3]};
  if (c.has("kernel_shape") && sp.ints("kernel_shape", 1) != kernel) c.bad("kernel_shape does not match the weight's shape");
  const std::vector<int64_t> strides = sp.ints("strides", 1), dil = sp.ints("dilations", 1);
  const std::vector<int64_t> p4 = resolve_pads(c, c.m.shape(x), kernel, strides, dil, sp.pads());
  std::vector<int64_t> pads = {p4[0], p4[1]};
  uint32_t in = x;
  if (p4[0] != p4[2] || p4[1] != p4[3]) {  // asymmetric: zeros added first
    in = pad_spatial(c, x, p4, 0.0);
    pads = {0, 0};
  }
  uint32_t y = c.m.emit(c, OpId::k_conv2d, {in, w}, Attrs::of(strides, pads, dil, c.i("group", 1)));
  if (c.given(2)) y = c.m.emit(c, OpId::k_add, {y, c.m.reshape(c, c.in[2], {-1, 1, 1})});
  return {sp.out(y)};
}

Handler pool(OpId op) {
  return [op](NodeCtx& c) {
    const Spatial sp(c, c.at(0));
    const uint32_t x = sp.in(c.at(0));
    if (c.node.output_size() > 1 && !c.node.output(1).empty()) c.unsupported("MaxPool's Indices output");
    if (c.i("storage_order", 0) != 0) c.unsupported("storage_order = 1");
    if (!c.has("kernel_shape")) c.bad("kernel_shape is required");
    const std::vector<int64_t> kernel = sp.ints("kernel_shape", 1);
    const std::vector<int64_t> strides = sp.ints("strides", 1), dil = sp.ints("dilations", 1);
    if (dil[0] != 1 || dil[1] != 1) c.unsupported("dilated pooling");
    const std::vector<int64_t> p4 = resolve_pads(c, c.m.shape(x), kernel, strides, dil, sp.pads());
    const bool avg = op == OpId::k_avg_pool2d, include_pad = avg && c.i("count_include_pad", 0) != 0;
    const bool any = p4[0] || p4[1] || p4[2] || p4[3];
    // Spore pads symmetrically, at most half the kernel, and its average divides by the cells
    // inside the input: other padding is added explicitly (-inf for max; zeros that count for an
    // average with count_include_pad = 1); an average that must not count explicit padding is refused.
    const bool explicit_pad = any && (p4[0] != p4[2] || p4[1] != p4[3] || 2 * p4[0] > kernel[0] || 2 * p4[1] > kernel[1] || include_pad);
    if (explicit_pad && c.i("ceil_mode", 0) != 0) c.unsupported("ceil_mode with asymmetric or explicit padding");
    const DType t = c.m.dtype(x);
    // Max pooling of 8-bit integers: exact in float32 and back.
    const bool widen = op == OpId::k_max_pool2d && (t == DType::kUInt8 || t == DType::kInt8);
    uint32_t in = widen ? c.m.cast_to(c, x, DType::kFloat32) : x;
    std::vector<int64_t> pads = {p4[0], p4[1]};
    if (explicit_pad) {
      in = pad_spatial(c, in, p4, avg ? 0.0 : -INFINITY);
      pads = {0, 0};
    }
    uint32_t y = c.m.emit(c, op, {in}, Attrs::of(kernel, strides, pads, c.i("ceil_mode", 0) != 0));
    if (explicit_pad && avg && !include_pad) {
      // Averages over the cells inside only, with asymmetric or wide padding: the average of the
      // zero-padded input divided by that of zero-padded ones (the share of each window inside).
      const Shape& xs = c.m.shape(x);
      const uint32_t ones = c.m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>{1, 1, xs[2], xs[3]}, 1.0, c.m.dtype(x)));
      const uint32_t share = c.m.emit(c, op, {pad_spatial(c, ones, p4, 0.0)}, Attrs::of(kernel, strides, pads, c.i("ceil_mode", 0) != 0));
      y = c.m.emit(c, OpId::k_div, {y, share});
    }
    return std::vector<uint32_t>{sp.out(widen ? c.m.cast_to(c, y, t) : y)};
  };
}

std::vector<uint32_t> gemm(NodeCtx& c) {
  uint32_t a = c.at(0), b = c.at(1);
  if (c.m.shape(a).ndim() != 2 || c.m.shape(b).ndim() != 2) c.bad("Gemm takes 2-D A and B");
  if (c.i("transA", 0)) a = c.m.emit(c, OpId::k_permute, {a}, Attrs::of(std::vector<int64_t>{1, 0}));
  if (c.i("transB", 0)) b = c.m.emit(c, OpId::k_permute, {b}, Attrs::of(std::vector<int64_t>{1, 0}));
  uint32_t y = c.m.emit(c, OpId::k_matmul, {a, b});
  const double alpha = c.f("alpha", 1.0), beta = c.f("beta", 1.0);
  if (alpha != 1.0) y = c.m.emit(c, OpId::k_mul, {y, c.m.scalar(alpha, c.m.dtype(y))});
  if (c.given(2) && beta != 0.0) {
    uint32_t bias = c.in[2];
    if (beta != 1.0) bias = c.m.emit(c, OpId::k_mul, {bias, c.m.scalar(beta, c.m.dtype(bias))});
    y = c.m.emit(c, OpId::k_add, {y, bias});
  }
  return {y};
}

std::vector<uint32_t> reshape(NodeCtx& c) {
  const uint32_t x = c.at(0);
  std::vector<int64_t> shape = c.m.int_data(c, c.at(1), "shape");
  const bool allowzero = c.i("allowzero", 0) != 0;
  const Shape& xs = c.m.shape(x);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 0 && !allowzero) {
      if ((int)d >= xs.ndim()) c.bad("shape copies dimension " + std::to_string(d) + " of a rank-" + std::to_string(xs.ndim()) + " input");
      shape[d] = xs[(int)d];
    }
  return {c.m.reshape(c, x, shape)};
}

std::vector<uint32_t> flatten(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  const int64_t a = c.i("axis", 1);  // in [-rank, rank]
  if (a < -s.ndim() || a > s.ndim()) c.bad("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(s.ndim()));
  const int axis = (int)(a < 0 ? a + s.ndim() : a);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < s.ndim(); ++d) (d < axis ? outer : inner) *= s[d];
  return {c.m.reshape(c, x, {outer, inner})};
}

std::vector<int64_t> axes_input_or_attr(NodeCtx& c, size_t k, int64_t from_opset) {
  if (c.m.opset >= from_opset) return c.given(k) ? c.m.int_data(c, c.in[k], "axes") : std::vector<int64_t>{};
  return c.ints("axes");
}

std::vector<uint32_t> squeeze(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  std::vector<int64_t> axes = axes_input_or_attr(c, 1, 13);
  std::set<int> drop;
  for (int64_t a : axes) {
    const int d = normalize_axis(c, a, s.ndim());
    if (s[d] != 1) c.bad("squeezes axis " + std::to_string(a) + " of extent " + std::to_string(s[d]));
    drop.insert(d);
  }
  std::vector<int64_t> out;
  for (int d = 0; d < s.ndim(); ++d)
    if (!(axes.empty() ? s[d] == 1 : drop.count(d) > 0)) out.push_back(s[d]);
  return {c.m.reshape(c, x, out)};
}

std::vector<uint32_t> unsqueeze(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  std::vector<int64_t> axes = axes_input_or_attr(c, 1, 13);
  const int rank = s.ndim() + (int)axes.size();
  std::set<int> add;
  for (int64_t a : axes)
    if (!add.insert(normalize_axis(c, a, rank)).second) c.bad("an axis is repeated");
  std::vector<int64_t> out;
  for (int d = 0, k = 0; d < rank; ++d) out.push_back(add.count(d) ? 1 : s[k++]);
  return {c.m.reshape(c, x, out)};
}

std::vector<uint32_t> transpose(NodeCtx& c) {
  const uint32_t x = c.at(0);
  std::vector<int64_t> perm = c.ints("perm");
  if (perm.empty())
    for (int d = c.m.shape(x).ndim() - 1; d >= 0; --d) perm.push_back(d);
  return {c.m.emit(c, OpId::k_permute, {x}, Attrs::of(perm))};
}

std::vector<uint32_t> gather(NodeCtx& c) {
  const uint32_t x = c.at(0);
  uint32_t index = c.at(1);
  const Shape& xs = c.m.shape(x);
  const int axis = normalize_axis(c, c.i("axis", 0), xs.ndim());
  const Shape is = c.m.shape(index);
  index = wrap_indices(c, index, xs[axis]);
  uint32_t flat = is.ndim() == 1 ? index : c.m.reshape(c, index, {-1});
  uint32_t y = c.m.emit(c, OpId::k_index_select, {x, flat}, Attrs::of((int64_t)axis));
  if (is.ndim() != 1) {
    std::vector<int64_t> out;
    for (int d = 0; d < axis; ++d) out.push_back(xs[d]);
    for (int64_t e : is) out.push_back(e);
    for (int d = axis + 1; d < xs.ndim(); ++d) out.push_back(xs[d]);
    y = c.m.reshape(c, y, out);
  }
  return {y};
}

std::vector<uint32_t> gather_elements(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const int axis = normalize_axis(c, c.i("axis", 0), c.m.shape(x).ndim());
  const uint32_t index = wrap_indices(c, c.at(1), c.m.shape(x)[axis]);
  return {c.m.emit(c, OpId::k_gather, {x, index}, Attrs::of((int64_t)axis))};
}

std::vector<uint32_t> expand(NodeCtx& c) {
  const uint32_t x = c.at(0);
  std::vector<int64_t> want = c.m.int_data(c, c.at(1), "shape");
  const Shape& s = c.m.shape(x);
  // Bidirectional broadcasting: the result has the larger rank, each extent the non-1 one.
  const int rank = std::max<int>(s.ndim(), (int)want.size());
  std::vector<int64_t> out(rank);
  for (int d = 0; d < rank; ++d) {
    const int ds = d - (rank - s.ndim()), dw = d - (rank - (int)want.size());
    const int64_t a = ds >= 0 ? s[ds] : 1, b = dw >= 0 ? want[dw] : 1;
    if (a != b && a != 1 && b != 1) c.bad("cannot broadcast " + s.str() + " to the shape given");
    out[d] = a == 1 ? b : a;
  }
  return {c.m.emit(c, OpId::k_expand, {x}, Attrs::of(out))};
}

std::vector<uint32_t> cast(NodeCtx& c) {
  DType t;
  const int64_t to = c.i("to", 0);
  if (const Carried* ct = carried_type((int32_t)to)) return {cast_to_carried(c, c.at(0), *ct, c.i("saturate", 1) != 0, c.s("round_mode", "up"))};
  if (!dtype_of((int32_t)to, t)) c.unsupported("a cast to " + onnx_type_name((int32_t)to));
  return {c.m.emit(c, OpId::k_cast, {c.at(0)}, Attrs::of(t))};
}

// A SparseTensorProto (op set 11's sparse_value) as a dense tensor: the values at the indices
// (linear [NNZ], or coordinates [NNZ, rank]), zeros elsewhere.
Tensor dense_of(NodeCtx& c, const ::onnx::SparseTensorProto& sp) {
  std::vector<int64_t> dims(sp.dims().begin(), sp.dims().end());
  const int64_t n = checked_numel(dims, c.where + " sparse_value");
  if (n > lite::kMaxValueElements) c.unsupported("a sparse Constant of over 2^31 elements");
  const Tensor values = tensor_of(sp.values(), c.where + " sparse_value values");
  const Tensor indices = tensor_of(sp.indices(), c.where + " sparse_value indices");
  if (values.ndim() != 1 || indices.dtype() != DType::kInt64) c.bad("sparse_value needs 1-D values and int64 indices");
  const int64_t nnz = values.numel();
  const int rank = (int)dims.size();
  const bool linear = indices.ndim() == 1;
  if (linear ? indices.numel() != nnz : indices.ndim() != 2 || indices.shape()[0] != nnz || indices.shape()[1] != rank)
    c.bad("sparse_value's indices do not match its values and dims");
  const std::vector<int64_t> idx = indices.to_vector<int64_t>();
  Tensor out = dispatch1(OpId::k_fill, {}, Attrs::of(dims, 0.0, values.dtype())).contiguous();
  const size_t size = dtype_size(values.dtype());
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const auto* src = static_cast<const uint8_t*>(values.data_ptr());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t at = 0;
    if (linear) {
      at = idx[(size_t)k];
    } else {
      for (int d = 0; d < rank; ++d) {
        const int64_t i = idx[(size_t)(k * rank + d)];
        if (i < 0 || i >= dims[d]) c.bad("a sparse_value index is out of range");
        at = at * dims[d] + i;
      }
    }
    if (at < 0 || at >= n) c.bad("a sparse_value index is out of range");
    std::memcpy(dst + at * size, src + k * size, size);
  }
  return out;
}

std::vector<uint32_t> constant(NodeCtx& c) {
  if (c.node.attribute_size() != 1) c.bad("a Constant takes exactly one value attribute");
  const AttributeProto& a = c.node.attribute(0);
  if (a.name() == "value" && a.type() == AttributeProto::TENSOR) {
    if (const Carried* ct = carried_type(a.t().data_type())) {
      const uint32_t id = c.m.constant(carried_tensor_of(a.t(), *ct, c.where + " value"));
      c.m.carried[id] = ct->onnx;
      return {id};
    }
    return {c.m.constant(tensor_of(a.t(), c.where + " value"))};
  }
  if (a.name() == "value_float") return {c.m.constant_of(std::vector<float>{a.f()}, Shape{})};
  if (a.name() == "value_int") return {c.m.constant_of(std::vector<int64_t>{a.i()}, Shape{})};
  if (a.name() == "value_floats") {
    std::vector<float> v(a.floats().begin(), a.floats().end());
    return {c.m.constant_of(v, Shape{(int64_t)v.size()})};
  }
  if (a.name() == "value_ints") {
    std::vector<int64_t> v(a.ints().begin(), a.ints().end());
    return {c.m.constant_of(v, Shape{(int64_t)v.size()})};
  }
  if (a.name() == "sparse_value" && a.type() == AttributeProto::SPARSE_TENSOR) return {c.m.constant(dense_of(c, a.sparse_tensor()))};
  if (a.name() == "value_string" || a.name() == "value_strings") c.unsupported("a string Constant (Spore has no string dtype)");
  c.unsupported("a Constant of attribute '" + a.name() + "'");
}

std::vector<uint32_t> shape_of(NodeCtx& c) {
  const Shape& s = c.m.shape(c.at(0));
  const int r = s.ndim();
  auto clampd = [r](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t start = clampd(c.i("start", 0)), end = clampd(c.i("end", r));
  std::vector<int64_t> v;
  for (int64_t d = start; d < end; ++d) v.push_back(s[(int)d]);
  return {c.m.constant_of(v, Shape{(int64_t)v.size()})};
}

std::vector<uint32_t> constant_of_shape(NodeCtx& c) {
  std::vector<int64_t> shape = c.m.int_data(c, c.at(0), "shape");
  checked_numel(shape, c.where + " shape");
  double value = 0;
  DType t = DType::kFloat32;
  if (const AttributeProto* a = find_attr(c.node, "value")) {
    if (a->type() != AttributeProto::TENSOR) c.bad("value is not a tensor");
    Tensor v = tensor_of(a->t(), c.where + " value");
    if (v.numel() != 1) c.bad("value must hold one element");
    t = v.dtype();
    value = dispatch1(OpId::k_cast, {v}, Attrs::of(DType::kFloat64)).to_vector<double>()[0];
  }
  return {c.m.emit(c, OpId::k_fill, {}, Attrs::of(shape, value, t))};
}

std::vector<uint32_t> clip(NodeCtx& c) {
  uint32_t y = c.at(0);
  if (c.m.opset < 11) {  // min and max attributes (float), before op set 11
    const DType t = c.m.dtype(y);
    if (c.has("min")) y = c.m.emit(c, OpId::k_maximum, {y, c.m.scalar(c.f("min", 0), t)});
    if (c.has("max")) y = c.m.emit(c, OpId::k_minimum, {y, c.m.scalar(c.f("max", 0), t)});
    if (y == c.at(0)) y = c.m.emit(c, OpId::k_copy, {y});
    return {y};
  }
  if (c.given(1)) y = c.m.emit(c, OpId::k_maximum, {y, c.in[1]});
  if (c.given(2)) y = c.m.emit(c, OpId::k_minimum, {y, c.in[2]});
  if (y == c.at(0)) y = c.m.emit(c, OpId::k_copy, {y});
  return {c.m.cast_to(c, y, c.m.dtype(c.at(0)))};
}

std::vector<uint32_t> softmax_like(NodeCtx& c, OpId op) {
  if (c.m.opset >= 13 && op == OpId::k_softmax && c.m.dtype(c.at(0)) == DType::kBFloat16)
    return {softmax_bfloat16_steps(c, c.at(0), c.i("axis", -1))};
  if (c.m.opset >= 13) return {c.m.emit(c, op, {c.at(0)}, Attrs::of(c.i("axis", -1)))};
  // Before op set 13 the input is read as 2-D, [prod(dims before axis), prod(dims from axis)]
  // (axis 1 by default), and the softmax runs over the whole second part.
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  const int64_t a = c.i("axis", 1);
  if (a < -s.ndim() || a > s.ndim()) c.bad("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(s.ndim()));
  const int axis = (int)(a < 0 ? a + s.ndim() : a);
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < s.ndim(); ++d) (d < axis ? outer : inner) *= s[d];
  const uint32_t y = c.m.emit(c, op, {c.m.reshape(c, x, {outer, inner})}, Attrs::of(int64_t{1}));
  return {c.m.reshape(c, y, std::vector<int64_t>(s.begin(), s.end()))};
}

std::vector<uint32_t> gelu(NodeCtx& c) {
  const std::string approx = c.s("approximate", "none");
  if (approx != "none" && approx != "tanh") c.bad("approximate '" + approx + "'");
  return {c.m.emit(c, approx == "tanh" ? OpId::k_gelu_tanh : OpId::k_gelu, {c.at(0)})};
}

std::vector<uint32_t> leaky_relu(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const DType t = c.m.dtype(x);
  const uint32_t neg = c.m.emit(c, OpId::k_lt, {x, c.m.scalar(0, t)});
  return {c.m.emit(c, OpId::k_where, {neg, c.m.emit(c, OpId::k_mul, {x, c.m.scalar(c.f("alpha", 0.01), t)}), x})};
}

std::vector<uint32_t> reciprocal(NodeCtx& c) {
  const uint32_t x = c.at(0);
  return {c.m.emit(c, OpId::k_div, {c.m.scalar(1, c.m.dtype(x)), x})};
}

// Per-channel parameters [C] as [C, 1, ..., 1], broadcasting against [N, C, ...].
uint32_t channel(NodeCtx& c, uint32_t p, int rank) {
  std::vector<int64_t> s = {-1};
  for (int d = 2; d < rank; ++d) s.push_back(1);
  return c.m.reshape(c, p, s);
}

// BatchNormalization's training mode (op set 14 on): normalised by the batch's mean and population
// variance per channel; the running statistics out are input * momentum + batch * (1 - momentum).
std::vector<uint32_t> batch_norm_training(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape s = c.m.shape(x);
  if (s.ndim() < 2) c.bad("the input has rank < 2");
  std::vector<int64_t> axes = {0};
  for (int d = 2; d < s.ndim(); ++d) axes.push_back(d);
  const DType t = c.m.dtype(x);
  const uint32_t mean = c.m.emit(c, OpId::k_mean, {x}, Attrs::of(axes, true));
  const uint32_t d = c.m.emit(c, OpId::k_sub, {x, mean});
  const uint32_t var = c.m.emit(c, OpId::k_mean, {c.m.emit(c, OpId::k_mul, {d, d})}, Attrs::of(axes, true));
  const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {var, c.m.scalar(c.f("epsilon", 1e-5), t)})});
  const uint32_t y = c.m.emit(c, OpId::k_add, {c.m.emit(c, OpId::k_mul, {d, c.m.emit(c, OpId::k_mul, {inv, channel(c, c.at(1), s.ndim())})}),
                                               channel(c, c.at(2), s.ndim())});
  const double momentum = c.f("momentum", 0.9);
  auto running = [&](size_t k, uint32_t batch) {
    const uint32_t in = c.m.cast_to(c, c.at(k), t);
    return c.m.emit(c, OpId::k_add, {c.m.emit(c, OpId::k_mul, {in, c.m.scalar(momentum, t)}),
                                     c.m.emit(c, OpId::k_mul, {c.m.reshape(c, batch, {s[1]}), c.m.scalar(1 - momentum, t)})});
  };
  return {y, running(3, mean), running(4, var)};
}

std::vector<uint32_t> batch_norm(NodeCtx& c) {
  if (c.i("training_mode", 0) != 0) {
    if (c.m.opset < 14) c.bad("training_mode is an attribute of op set 14 on");
    return batch_norm_training(c);
  }
  if (c.i("spatial", 1) == 0) c.unsupported("BatchNormalization with spatial = 0 (op set 7-8: per-element statistics)");
  for (int o = 1; o < c.node.output_size(); ++o)
    if (!c.node.output(o).empty()) c.unsupported("BatchNormalization's running statistics outputs");
  const uint32_t x = c.at(0);
  const int rank = c.m.shape(x).ndim();
  if (rank < 2) c.bad("the input has rank < 2");
  const DType t = c.m.dtype(x);
  const uint32_t scale = channel(c, c.at(1), rank), bias = channel(c, c.at(2), rank), mean = channel(c, c.at(3), rank),
                 var = channel(c, c.at(4), rank);
  const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {var, c.m.scalar(c.f("epsilon", 1e-5), c.m.dtype(var))})});
  uint32_t y = c.m.emit(c, OpId::k_mul, {c.m.emit(c, OpId::k_sub, {x, mean}), c.m.emit(c, OpId::k_mul, {inv, scale})});
  return {c.m.cast_to(c, c.m.emit(c, OpId::k_add, {y, bias}), t)};
}

std::vector<uint32_t> layer_norm(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const int rank = c.m.shape(x).ndim();
  const int axis = normalize_axis(c, c.i("axis", -1), rank);
  std::vector<int64_t> axes;
  for (int d = axis; d < rank; ++d) axes.push_back(d);
  const DType t = c.m.dtype(x);
  const uint32_t mean = c.m.emit(c, OpId::k_mean, {x}, Attrs::of(axes, true));
  const uint32_t d = c.m.emit(c, OpId::k_sub, {x, mean});
  const uint32_t var = c.m.emit(c, OpId::k_mean, {c.m.emit(c, OpId::k_mul, {d, d})}, Attrs::of(axes, true));
  const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {var, c.m.scalar(c.f("epsilon", 1e-5), t)})});
  uint32_t y = c.m.emit(c, OpId::k_mul, {c.m.emit(c, OpId::k_mul, {d, inv}), c.at(1)});
  if (c.given(2)) y = c.m.emit(c, OpId::k_add, {y, c.in[2]});
  return {y, mean, inv};  // Mean and InvStdDev keep the reduced axes as 1s, as ONNX's do
}

std::vector<uint32_t> split(NodeCtx& c) {
  const uint32_t x = c.at(0);
  const Shape& s = c.m.shape(x);
  const int axis = normalize_axis(c, c.i("axis", 0), s.ndim());
  const int n = c.node.output_size();
  // The sizes: an attribute before op set 13, an input from 13.
  std::vector<int64_t> sizes = c.m.opset < 13 ? c.ints("split") : c.given(1) ? c.m.int_data(c, c.in[1], "split") : std::vector<int64_t>{};
  if (sizes.empty()) {
    const int64_t parts = c.has("num_outputs") ? c.i("num_outputs", n) : n;
    if (parts <= 0 || parts != n) c.bad("num_outputs does not match the outputs named");
    const int64_t each = (s[axis] + parts - 1) / parts;
    for (int64_t k = 0, left = s[axis]; k < parts; ++k, left -= each) sizes.push_back(std::max<int64_t>(0, std::min(each, left)));
  }
  if ((int)sizes.size() != n) c.bad("split has " + std::to_string(sizes.size()) + " sizes for " + std::to_string(n) + " outputs");
  std::vector<uint32_t> out;
  int64_t at = 0;
  for (int64_t e : sizes) {
    if (e < 0) c.bad("a negative split size");
    out.push_back(c.m.emit(c, OpId::k_slice, {x}, Attrs::of((int64_t)axis, at, at + e, int64_t{1})));
    at += e;
  }
  if (at != s[axis]) c.bad("the split sizes do not add up to the axis' extent");
  return out;
}

std::vector<uint32_t> dropout(NodeCtx& c) {
  if (c.given(2)) {
    const Tensor& training = c.m.data(c, c.in[2], "training_mode");
    if (training.numel() != 1) c.bad("training_mode must hold one element");
    const bool training_on = training.to(DType::kFloat64).to_vector<double>()[0] != 0;
    // Training with a ratio of 0 keeps every element too; any other ratio draws random masks.
    double ratio = 0.5;
    if (training_on && c.given(1)) {
      const Tensor& r = c.m.data(c, c.in[1], "ratio");
      if (r.numel() != 1) c.bad("ratio must hold one element");
      ratio = r.to(DType::kFloat64).to_vector<double>()[0];
    }
    if (training_on && ratio != 0) c.unsupported("Dropout in training mode (random masks)");
  }
  // In inference every element is kept: the mask is all true.
  const Shape& s = c.m.shape(c.at(0));
  const uint32_t mask = c.m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>(s.begin(), s.end()), 1.0, DType::kBool));
  return {c.at(0), mask};  // the input's value itself, as Identity
}

std::vector<uint32_t> cast_like(NodeCtx& c) {
  if (const Carried* ct = carried_of(c.m, c.at(1))) return {cast_to_carried(c, c.at(0), *ct, c.i("saturate", 1) != 0, c.s("round_mode", "up"))};
  return {c.m.cast_to(c, c.m.emit(c, OpId::k_copy, {c.at(0)}), c.m.dtype(c.at(1)))};
}

std::vector<uint32_t> size_of(NodeCtx& c) {
  return {c.m.constant_of(std::vector<int64_t>{c.m.shape(c.at(0)).numel()}, Shape{})};
}

// Range(start, limit, delta): 0-d constants; the registry's arange.
std::vector<uint32_t> range(NodeCtx& c) {
  for (size_t k = 0; k < 3; ++k)
    if (c.m.unknowable.count(c.at(k))) return range_per_iteration(c);
  double v[3];
  DType t = c.m.dtype(c.at(0));
  for (int k = 0; k < 3; ++k) {
    const Tensor& d = c.m.data(c, c.at((size_t)k), k == 0 ? "start" : k == 1 ? "limit" : "delta");
    if (d.numel() != 1) c.bad("Range takes 0-d start, limit and delta");
    v[k] = d.to(DType::kFloat64).to_vector<double>()[0];
  }
  if (v[2] == 0) c.bad("Range's delta is 0");
  return {c.m.emit(c, OpId::k_arange, {}, Attrs::of(v[0], v[1], v[2], t))};
}

// Reductions built on sum: L1 = sum |x|, L2 = sqrt(sum x^2), LogSum = log(sum x),
// LogSumExp = log(sum exp x) (computed as ONNX's reference does, without a max shift).
Handler reduce_composite(const char* kind) {
  const std::string k = kind;
  return [k](NodeCtx& c) {
    const bool from_input = c.m.opset >= 18;
    std::vector<int64_t> axes = reduce_axes_of(c, from_input);
    const bool keepdims = c.i("keepdims", 1) != 0;
    uint32_t x = c.at(0);
    if (k == "l1") x = c.m.emit(c, OpId::k_abs, {x});
    if (k == "l2") x = c.m.emit(c, OpId::k_mul, {x, x});
    if (k == "logsumexp") x = c.m.emit(c, OpId::k_exp, {x});
    uint32_t y;
    if (axes.empty() && c.i("noop_with_empty_axes", 0) != 0) y = c.m.emit(c, OpId::k_copy, {x});
    else y = c.m.emit(c, OpId::k_sum, {x}, Attrs::of(axes, keepdims));
    if (k == "l2") y = c.m.emit(c, OpId::k_sqrt, {y});
    if (k == "logsum" || k == "logsumexp") y = c.m.emit(c, OpId::k_log, {y});
    return std::vector<uint32_t>{c.m.cast_to(c, y, c.m.dtype(c.at(0)))};
  };
}

// Activations written with registry ops, in the formulas of the ONNX spec.
std::vector<uint32_t> activation(NodeCtx& c, const std::string& op) {
  const uint32_t x = c.at(0);
  Mapper& m = c.m;
  const DType t = m.dtype(x);
  auto k = [&](double v) { return m.scalar(v, t); };
  auto e = [&](OpId o, std::vector<uint32_t> ins) { return m.emit(c, o, ins); };
  if (op == "Elu" || op == "Selu" || op == "Celu") {
    const double alpha = c.f("alpha", op == "Selu" ? 1.67326319217681884765625 : 1.0);
    uint32_t neg;
    if (op == "Celu") neg = e(OpId::k_mul, {k(alpha), e(OpId::k_sub, {e(OpId::k_exp, {e(OpId::k_div, {x, k(alpha)})}), k(1)})});
    else neg = e(OpId::k_mul, {k(alpha), e(OpId::k_sub, {e(OpId::k_exp, {x}), k(1)})});
    uint32_t y = e(OpId::k_where, {e(op == "Selu" ? OpId::k_le : OpId::k_lt, {x, k(0)}), neg, x});
    if (op == "Selu") y = e(OpId::k_mul, {k(c.f("gamma", 1.05070102214813232421875)), y});
    return {y};
  }
  if (op == "HardSigmoid" || op == "HardSwish") {
    const double alpha = op == "HardSwish" ? 1.0 / 6 : c.f("alpha", 0.2), beta = op == "HardSwish" ? 0.5 : c.f("beta", 0.5);
    const uint32_t h = e(OpId::k_maximum, {k(0), e(OpId::k_minimum, {k(1), e(OpId::k_add, {e(OpId::k_mul, {x, k(alpha)}), k(beta)})})});
    return {op == "HardSwish" ? e(OpId::k_mul, {x, h}) : h};
  }
  if (op == "Softplus") return {e(OpId::k_log, {e(OpId::k_add, {e(OpId::k_exp, {x}), k(1)})})};
  if (op == "Softsign") return {e(OpId::k_div, {x, e(OpId::k_add, {e(OpId::k_abs, {x}), k(1)})})};
  if (op == "ThresholdedRelu") return {e(OpId::k_where, {e(OpId::k_gt, {x, k(c.f("alpha", 1.0))}), x, k(0)})};
  if (op == "PRelu") return {e(OpId::k_where, {e(OpId::k_lt, {x, k(0)}), e(OpId::k_mul, {x, c.at(1)}), x})};
  if (op == "Swish") return {e(OpId::k_mul, {x, e(OpId::k_sigmoid, {e(OpId::k_mul, {x, k(c.f("alpha", 1.0))})})})};
  if (op == "Mish") return {e(OpId::k_mul, {x, e(OpId::k_tanh, {e(OpId::k_log, {e(OpId::k_add, {e(OpId::k_exp, {x}), k(1)})})})})};
  if (op == "Shrink") {  // x + bias below -lambd, x - bias above lambd, else 0
    const double lambd = c.f("lambd", 0.5), bias = c.f("bias", 0);
    const uint32_t high = e(OpId::k_where, {e(OpId::k_gt, {x, k(lambd)}), e(OpId::k_sub, {x, k(bias)}), k(0)});
    return {e(OpId::k_where, {e(OpId::k_lt, {x, k(-lambd)}), e(OpId::k_add, {x, k(bias)}), high})};
  }
  if (op == "SwiGLU") {  // Swish_alpha(A) * B, A and B of one shape
    if (m.shape(c.at(1)) != m.shape(x)) c.bad("SwiGLU's A and B must have the same shape");
    return {e(OpId::k_mul, {e(OpId::k_mul, {x, e(OpId::k_sigmoid, {e(OpId::k_mul, {x, k(c.f("alpha", 1.0))})})}), c.at(1)})};
  }
  c.unsupported(op);
}

// RMSNormalization (op set 23): the registry's rms_norm over the last axis with a [D] scale;
// otherwise x * rsqrt(mean(x^2 over the axes) + eps) * scale.
std::vector<uint32_t> rms_normalization(NodeCtx& c) {
  const uint32_t x = c.at(0), scale = c.at(1);
  const Shape& s = c.m.shape(x);
  const int axis = normalize_axis(c, c.i("axis", -1), s.ndim());
  const double eps = c.f("epsilon", 1e-5);
  const Shape& ws = c.m.shape(scale);
  if (axis == s.ndim() - 1 && ws.ndim() == 1 && ws[0] == s[axis] && c.m.dtype(scale) == c.m.dtype(x))
    return {c.m.emit(c, OpId::k_rms_norm, {x, scale}, Attrs::of(eps, false))};
  std::vector<int64_t> axes;
  for (int d = axis; d < s.ndim(); ++d) axes.push_back(d);
  const uint32_t ms = c.m.emit(c, OpId::k_mean, {c.m.emit(c, OpId::k_mul, {x, x})}, Attrs::of(axes, true));
  const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {ms, c.m.scalar(eps, c.m.dtype(x))})});
  return {c.m.cast_to(c, c.m.emit(c, OpId::k_mul, {c.m.emit(c, OpId::k_mul, {x, inv}), scale}), c.m.dtype(x))};
}

// ScatterElements with reduction "add" is the registry's scatter_add (data plus the updates
// summed at the indices); mul, max and min go through scatter_reduced's one-hot.
std::vector<uint32_t> scatter_elements(NodeCtx& c) {
  const std::string reduction = c.s("reduction", "none");
  if (reduction != "add" && reduction != "none" && reduction != "mul" && reduction != "max" && reduction != "min")
    c.bad("ScatterElements' reduction '" + reduction + "' is none, add, mul, max or min");
  const uint32_t x = c.at(0);
  const int axis = normalize_axis(c, c.i("axis", 0), c.m.shape(x).ndim());
  const uint32_t index = wrap_indices(c, c.at(1), c.m.shape(x)[axis]);
  if (reduction == "mul" || reduction == "max" || reduction == "min") {
    // Each update's linear index into x: its own position, the axis coordinate from the index.
    const Shape xs = c.m.shape(x), us = c.m.shape(index);
    if (us.ndim() != xs.ndim() || c.m.shape(c.at(2)) != us) c.bad("indices and updates must share a shape of data's rank");
    if (us.numel() > lite::kMaxValueElements) c.unsupported("ScatterElements over 2^31 updates");
    std::vector<int64_t> stride((size_t)xs.ndim(), 1);
    for (int d = xs.ndim() - 2; d >= 0; --d) stride[(size_t)d] = stride[(size_t)d + 1] * xs[d + 1];
    std::vector<int64_t> fixed((size_t)us.numel());
    for (int64_t e = 0; e < us.numel(); ++e) {
      int64_t rest = e, at = 0;
      for (int d = us.ndim() - 1; d >= 0; --d) {
        if (d != axis) at += (rest % us[d]) * stride[(size_t)d];
        rest /= us[d];
      }
      fixed[(size_t)e] = at;
    }
    const uint32_t along = c.m.emit(c, OpId::k_mul, {c.m.reshape(c, c.m.cast_to(c, index, DType::kInt64), {-1}), c.m.scalar((double)stride[(size_t)axis], DType::kInt64)});
    const uint32_t lin = c.m.emit(c, OpId::k_add, {c.m.constant_of(fixed, Shape{us.numel()}), along});
    const uint32_t y = scatter_reduced(c, c.m.reshape(c, x, {-1}), lin, c.m.reshape(c, c.at(2), {-1}), reduction);
    return {c.m.reshape(c, y, std::vector<int64_t>(xs.begin(), xs.end()))};
  }
  if (reduction == "add") return {c.m.emit(c, OpId::k_scatter_add, {x, index, c.at(2)}, Attrs::of((int64_t)axis))};
  // "none" writes the updates (ONNX leaves duplicate indices undefined): the updates scattered
  // onto zeros where a scattered count of ones marks the positions written, x elsewhere.
  auto filled = [&](uint32_t like, double v) {
    const Shape& s = c.m.shape(like);
    return c.m.emit(c, OpId::k_fill, {}, Attrs::of(std::vector<int64_t>(s.begin(), s.end()), v, c.m.dtype(x)));
  };
  const uint32_t written = c.m.emit(c, OpId::k_gt, {c.m.emit(c, OpId::k_scatter_add, {filled(x, 0), index, filled(c.at(2), 1)}, Attrs::of((int64_t)axis)),
                                                   c.m.scalar(0, c.m.dtype(x))});
  const uint32_t updates = c.m.emit(c, OpId::k_scatter_add, {filled(x, 0), index, c.at(2)}, Attrs::of((int64_t)axis));
  return {c.m.emit(c, OpId::k_where, {written, updates, x})};
}

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = [] {
    std::map<std::string, Handler> t;
    // Every op whose row names a one-to-one ONNX op (NOTE [Op facts]); the entries below replace
    // one where ONNX's op means more than the registry's (integer Div, variadic Max and Min).
    for (const OpDef& d : all_ops())
      if (d.facts.onnx && *d.facts.onnx) t[d.facts.onnx] = one_to_one(d);
    t["Div"] = [](NodeCtx& c) {
      const DType t = c.m.dtype(c.at(0));
      if (is_floating(t)) return std::vector<uint32_t>{c.m.emit(c, OpId::k_div, {c.at(0), c.at(1)})};
      // Integer Div truncates toward zero: divided in float64 (exact below 2^53), cast back.
      const uint32_t q = c.m.emit(c, OpId::k_div, {c.m.cast_to(c, c.at(0), DType::kFloat64), c.m.cast_to(c, c.at(1), DType::kFloat64)});
      return std::vector<uint32_t>{c.m.cast_to(c, q, t)};
    };
    // Identity names its input's value again: a copy node per Identity cost PP-OCRv6's recogniser
    // 130 copies, 1.9 ms of 28 (Paddle's exporter writes one after most ops). An output that ends
    // up a graph's or a subgraph's twice, or an input's, is copied where outputs are made.
    t["Identity"] = [](NodeCtx& c) { return std::vector<uint32_t>{c.at(0)}; };
    t["Max"] = variadic(OpId::k_maximum);
    t["Min"] = variadic(OpId::k_minimum);
    t["Sum"] = variadic(OpId::k_add);
    t["Mean"] = variadic(OpId::k_add, true);
    t["Reciprocal"] = reciprocal;
    t["LeakyRelu"] = leaky_relu;
    t["Gelu"] = gelu;
    t["Clip"] = clip;
    t["Cast"] = cast;
    t["ReduceSum"] = reduce(OpId::k_sum, 13);
    t["ReduceMean"] = reduce(OpId::k_mean, 18);
    t["ReduceMax"] = reduce(OpId::k_max, 18);
    t["ReduceMin"] = reduce(OpId::k_min, 18);
    t["ReduceSumSquare"] = reduce(OpId::k_sum, 18, true);
    t["ArgMax"] = arg_reduce(OpId::k_argmax);
    t["ArgMin"] = arg_reduce(OpId::k_argmin);
    t["MatMul"] = [](NodeCtx& c) { return std::vector<uint32_t>{c.m.emit(c, OpId::k_matmul, {c.at(0), c.at(1)})}; };
    t["Gemm"] = gemm;
    t["Conv"] = conv;
    t["MaxPool"] = pool(OpId::k_max_pool2d);
    t["AveragePool"] = pool(OpId::k_avg_pool2d);
    // Global pooling over every spatial axis of [N, C, D1, ..., Dk] (k >= 1: a 1-D signal, an
    // image, a volume), kept as extents of 1; 2-D averages keep the adaptive pooling kernel.
    t["GlobalAveragePool"] = [](NodeCtx& c) {
      const std::vector<int64_t> axes = spatial_axes(c, c.at(0));
      if (axes.size() == 2)
        return std::vector<uint32_t>{c.m.emit(c, OpId::k_adaptive_avg_pool2d, {c.at(0)}, Attrs::of(std::vector<int64_t>{1, 1}))};
      return std::vector<uint32_t>{c.m.emit(c, OpId::k_mean, {c.at(0)}, Attrs::of(axes, true))};
    };
    t["GlobalMaxPool"] = [](NodeCtx& c) {
      return std::vector<uint32_t>{c.m.emit(c, OpId::k_max, {c.at(0)}, Attrs::of(spatial_axes(c, c.at(0)), true))};
    };
    t["Softmax"] = [](NodeCtx& c) { return softmax_like(c, OpId::k_softmax); };
    t["LogSoftmax"] = [](NodeCtx& c) { return softmax_like(c, OpId::k_log_softmax); };
    t["Reshape"] = reshape;
    t["Flatten"] = flatten;
    t["Squeeze"] = squeeze;
    t["Unsqueeze"] = unsqueeze;
    t["Transpose"] = transpose;
    t["Concat"] = [](NodeCtx& c) {
      std::vector<uint32_t> ins;
      for (size_t k = 0; k < c.in.size(); ++k) ins.push_back(c.at(k));
      return std::vector<uint32_t>{c.m.emit(c, OpId::k_concat, ins, Attrs::of(c.i("axis", 0)))};
    };
    t["Gather"] = gather;
    t["GatherElements"] = gather_elements;
    t["Expand"] = expand;
    t["Constant"] = constant;
    t["Shape"] = shape_of;
    t["ConstantOfShape"] = constant_of_shape;
    t["BatchNormalization"] = batch_norm;
    t["LayerNormalization"] = layer_norm;
    t["Split"] = split;
    t["Dropout"] = dropout;
    t["CastLike"] = cast_like;
    t["RMSNormalization"] = rms_normalization;
    t["ScatterElements"] = scatter_elements;
    t["Scatter"] = scatter_elements;  // op sets 9-10: ScatterElements without reduction
    t["Size"] = size_of;
    t["Range"] = range;
    t["ReduceL1"] = reduce_composite("l1");
    t["ReduceL2"] = reduce_composite("l2");
    t["ReduceLogSum"] = reduce_composite("logsum");
    t["ReduceLogSumExp"] = reduce_composite("logsumexp");
    t["Xor"] = binary(OpId::k_ne, false);
    for (const char* op : {"Elu", "Selu", "Celu", "HardSigmoid", "HardSwish", "Softplus", "Softsign", "ThresholdedRelu", "PRelu",
                           "Swish", "Mish", "Shrink", "SwiGLU"})
      t[op] = [op = std::string(op)](NodeCtx& c) { return activation(c, op); };
    add_layout_ops(t);
    add_resize_ops(t);
    add_conv_transpose_ops(t);
    add_recurrent_ops(t);
    add_control_ops(t);
    add_math_ops(t);
    add_nd_index_ops(t);
    add_topk_ops(t);
    add_attention_ops(t);
    add_flex_attention_ops(t);
    add_ml_ops(t);
    add_roi_align_ops(t);
    add_training_ops(t);
    add_loss_ops(t);
    add_trig_ops(t);
    add_product_ops(t);
    add_rotary_ops(t);
    add_einsum_ops(t);
    add_bitwise_ops(t);
    add_linear_attention_ops(t);
    add_grid_sample_ops(t);
    add_quantize_ops(t);
    add_pool_nd_ops(t);
    add_signal_ops(t);
    add_scatter_ops(t);
    add_nms_ops(t);
    add_unique_ops(t);
    return t;
  }();
  return table;
}

// ---- the graph ----------------------------------------------------------------------------
// An input extent that is a positive number. A negative one (exporters write -1) is dynamic, as
// ONNX Runtime reads it, like a named (dim_param) or an unnamed dimension, and so is 0, which
// some exporters write for "unknown" (an input that really is empty still maps, from its real
// shape at predict; NOTE [ONNX dynamic shapes]).
bool fixed_extent(const ::onnx::TensorShapeProto::Dimension& dim) { return dim.has_dim_value() && dim.dim_value() > 0; }

// The symbol of a dynamic dimension: its dim_param, or one of its own where it has none or the
// anonymous "?" (paddle2onnx writes "?" for every unknown extent, of unrelated dimensions: one
// name would tie an image's height to its width; ONNX Runtime does not tie them either).
std::string dim_symbol(const ::onnx::TensorShapeProto::Dimension& dim, const std::string& value, int d) {
  const std::string& p = dim.dim_param();
  return p.empty() || p == "?" ? value + ":" + std::to_string(d) : p;
}

// Every node's op, in the graph and its If branches, is one the table maps: checked before any
// mapping, so that an unmapped op is refused at load even where the mapping itself waits for
// predict's inputs.
// The handler table's key of a node: the op type for the default domain, "domain/op" for another
// (com.microsoft's contrib ops that ONNX Runtime's tools write, NOTE [ONNX]).
std::string handler_key(const NodeProto& node) {
  if (node.domain().empty() || node.domain() == "ai.onnx") return node.op_type();
  return node.domain() + "/" + node.op_type();
}

[[noreturn]] void unmapped(const NodeProto& node, const std::string& where) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    fail(ErrorCode::kUnsupported, where + ": the op " + node.op_type() + " of the domain '" + node.domain() +
                                      "' is not mapped onto Spore's ops (NOTE [ONNX] lists the contrib ops that are)");
  fail(ErrorCode::kUnsupported, where + ": the ONNX op " + node.op_type() + " is not mapped onto Spore's ops (NOTE [ONNX] lists those that are)");
}

void check_ops_mapped(const GraphProto& graph, const std::string& label, int depth) {
  if (depth > kMaxSubgraphDepth)
    fail(ErrorCode::kUnsupported, label + ": subgraphs nested over " + std::to_string(kMaxSubgraphDepth) + " deep");
  for (int n = 0; n < graph.node_size(); ++n) {
    const NodeProto& node = graph.node(n);
    const std::string where = label + ": node " + std::to_string(n) + " (" + node.op_type() + (node.name().empty() ? "" : " '" + node.name() + "'") + ")";
    if (!handlers().count(handler_key(node))) unmapped(node, where);
    for (const AttributeProto& a : node.attribute())
      if (a.type() == AttributeProto::GRAPH) check_ops_mapped(a.g(), where + " " + a.name(), depth + 1);
  }
}

// Whether any node of `g` (subgraphs included) is of the default domain.
bool uses_default_domain(const GraphProto& g) {
  for (const NodeProto& n : g.node()) {
    if (n.domain().empty() || n.domain() == "ai.onnx") return true;
    for (const AttributeProto& a : n.attribute())
      if (a.type() == AttributeProto::GRAPH && uses_default_domain(a.g())) return true;
  }
  return false;
}

int64_t default_opset(const ModelProto& model, const std::string& label) {
  int64_t opset = -1;
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = o.version();
  // A graph of other domains' ops only (an ai.onnx.ml model) needs no default op set.
  if (opset < 0 && model.has_graph() && !uses_default_domain(model.graph())) return kNewestOpset;
  if (opset < 0) fail(ErrorCode::kFormat, label + ": the model imports no default-domain op set (opset_import)");
  if (opset < 1 || opset > kNewestOpset)
    fail(ErrorCode::kVersion, label + ": the model uses ONNX op set " + std::to_string(opset) + "; Spore reads op sets " +
                                  std::to_string(kOldestOpset) + " to " + std::to_string(kNewestOpset) + "; convert it (onnx.version_converter.convert_version(model, " + std::to_string(kNewestOpset) + "))");
  return opset;
}

void map_nodes(Mapper& m, const GraphProto& graph, const std::string& label) {
  const auto& table = handlers();
  for (int n = 0; n < graph.node_size(); ++n) {
    const NodeProto& node = graph.node(n);
    std::string where = label + ": node " + std::to_string(n) + " (" + node.op_type() + (node.name().empty() ? "" : " '" + node.name() + "'") + ")";
    auto it = table.find(handler_key(node));
    if (it == table.end()) unmapped(node, where);
    // Before op set 7 binary ops broadcast only under a `broadcast` attribute: such graphs are
    // refused unless every op is one whose first version means what its newest does.
    static const std::set<std::string> unchanged_since_1 = {"Not", "Abs", "Neg", "Exp", "Log", "Sqrt", "Relu", "Sigmoid", "Tanh",
                                                            "Reciprocal", "Identity", "Transpose", "Flatten"};
    if (m.opset < kOldestOpset && !unchanged_since_1.count(node.op_type()))
      fail(ErrorCode::kVersion, where + ": op set " + std::to_string(m.opset) + " has an older " + node.op_type() + " than Spore maps (op sets " +
                                    std::to_string(kOldestOpset) + " to " + std::to_string(kNewestOpset) +
                                    "); convert the model (onnx.version_converter.convert_version(model, " + std::to_string(kNewestOpset) + "))");
    NodeCtx c{m, node, {}, where};
    for (const std::string& name : node.input()) {
      if (name.empty()) {
        c.in.push_back(kNone);
        continue;
      }
      auto v = m.names.find(name);
      if (v == m.names.end())
        fail(ErrorCode::kFormat, where + " reads '" + name + "', which no graph input, initializer or earlier node makes "
                                                            "(a dangling name, or a cycle)");
      c.in.push_back(v->second);
    }
    if (!m.ragged.empty()) check_ragged_reader(c);  // NOTE [Ragged outputs]
    const bool widened = widen_bfloat16(c);  // NOTE [ONNX carried types]
    std::vector<uint32_t> outs = it->second(c);
    if (widened) narrow_bfloat16(c, outs);
    if (!m.carried.empty()) settle_carried(c, outs);
    if (!m.ragged.empty()) mark_ragged_results(c, outs);
    for (int o = 0; o < node.output_size(); ++o) {
      if (node.output(o).empty()) continue;
      if (o >= (int)outs.size()) c.unsupported("output " + std::to_string(o));
      if (m.names.count(node.output(o))) c.bad("output '" + node.output(o) + "' is already defined (names must be unique)");
      m.names[node.output(o)] = outs[o];
    }
  }
}

// `carried_outputs` (when given) receives each output's carried ONNX type name, "" for the others
// (NOTE [ONNX carried types]): what the mapping found, whether or not the file declares the type.
ir::Graph map_graph(const ModelProto& model, const std::string& label, int64_t opset, std::vector<ir::RaggedOutput>& ragged,
                    const std::map<std::string, Tensor>* given = nullptr, std::set<std::string>* used = nullptr,
                    std::vector<std::string>* carried_outputs = nullptr) {
  const ::onnx::GraphProto& graph = model.graph();
  Mapper m;
  m.label = label;
  m.opset = opset;
  m.given = given;
  std::set<std::string> initializer_names;
  for (int k = 0; k < graph.initializer_size(); ++k) {
    const TensorProto& t = graph.initializer(k);
    const std::string what = label + ": initializer '" + t.name() + "'";
    if (t.name().empty()) fail(ErrorCode::kFormat, label + ": initializer " + std::to_string(k) + " has no name");
    const Carried* ct = carried_type(t.data_type());
    Tensor data = ct ? carried_tensor_of(t, *ct, what) : tensor_of(t, what);
    const uint32_t id = m.push({t.name(), ir::ValueKind::kParameter, data.dtype(), Mapper::dims_of(data.shape()), data}, data);
    if (ct) m.carried[id] = ct->onnx;
    m.names[t.name()] = id;
    initializer_names.insert(t.name());
  }
  for (const auto& in : graph.input()) {
    if (initializer_names.count(in.name())) continue;  // an initializer listed as an input (IR < 4): a weight
    if (!in.type().has_tensor_type())
      fail(ErrorCode::kUnsupported, label + ": input '" + in.name() + "' is not a tensor (sequences, maps and optionals are not mapped)");
    const auto& tt = in.type().tensor_type();
    DType dtype;
    if (!value_dtype_of(tt.elem_type(), dtype))
      fail(ErrorCode::kUnsupported, label + ": input '" + in.name() + "' has dtype " + onnx_type_name(tt.elem_type()));
    const Carried* ct = carried_type(tt.elem_type());
    if (!tt.has_shape()) fail(ErrorCode::kUnsupported, label + ": input '" + in.name() + "' has no shape (its rank must be known)");
    std::vector<ir::Dim> dims;
    std::vector<int64_t> probe_shape;
    if (given) {  // predict's tensor: its shape, fixed, and its value
      auto t = given->find(in.name());
      if (t == given->end()) fail(ErrorCode::kValue, label + ": no tensor given for input '" + in.name() + "'");
      // A copy: the mapping may fold this value into constants, which Lite seals (NOTE [Sealed
      // constants]); the caller's own tensor must stay theirs to write.
      const Tensor v = t->second.to(Device::cpu()).contiguous().clone();
      if (v.dtype() != dtype || v.ndim() != tt.shape().dim_size())
        fail(ErrorCode::kValue, label + ": input '" + in.name() + "' is " + dtype_name(v.dtype()) + v.shape().str() +
                                    "; the model declares " + dtype_name(dtype) + " of rank " + std::to_string(tt.shape().dim_size()));
      const uint32_t id = m.push({in.name(), ir::ValueKind::kInput, dtype, Mapper::dims_of(v.shape()), v}, Mapper::placeholder(v.shape(), dtype));
      if (ct) m.carried[id] = ct->onnx;
      m.names[in.name()] = id;
      m.g.inputs.push_back(id);
      continue;
    }
    for (int d = 0; d < tt.shape().dim_size(); ++d) {
      const auto& dim = tt.shape().dim(d);
      if (!fixed_extent(dim))  // map_model maps such a graph only with the inputs given
        fail(ErrorCode::kInternal, label + ": input '" + in.name() + "' has a symbolic extent and no tensor was given");
      dims.push_back({dim.dim_value(), {}});
      probe_shape.push_back(dim.dim_value());
    }
    if (checked_numel(probe_shape, label + ": input '" + in.name() + "'") > lite::kMaxValueElements)
      fail(ErrorCode::kUnsupported, label + ": input '" + in.name() + "' has over Lite's 2^31 elements per value");
    const uint32_t id = m.push({in.name(), ir::ValueKind::kInput, dtype, dims, {}}, Mapper::placeholder(Shape(probe_shape), dtype));
    if (ct) m.carried[id] = ct->onnx;
    m.names[in.name()] = id;
    m.g.inputs.push_back(id);
  }
  map_nodes(m, graph, label);
  for (const auto& out : graph.output()) {
    auto v = m.names.find(out.name());
    if (v == m.names.end()) fail(ErrorCode::kFormat, label + ": graph output '" + out.name() + "' is made by no node");
    uint32_t id = v->second;
    if (carried_outputs) {
      const Carried* ct = m.carried.count(id) ? carried_type(m.carried.at(id)) : nullptr;
      carried_outputs->push_back(ct ? ct->name : "");
    }
    // Each output gets a value of its own bearing its name (an output that is an input, a weight
    // or another output is copied).
    bool shared = m.g.values[id].kind != ir::ValueKind::kNode || !m.g.values[id].name.empty();
    if (shared) {
      NodeCtx c{m, ::onnx::NodeProto::default_instance(), {}, label + ": output '" + out.name() + "'"};
      id = m.emit(c, OpId::k_copy, {id});
    }
    m.g.values[id].name = out.name();
    if (auto r = m.ragged.find(v->second); r != m.ragged.end())
      ragged.push_back({(uint32_t)m.g.outputs.size(), r->second.first, r->second.second});
    m.g.outputs.push_back(id);
  }
  if (m.g.outputs.empty()) fail(ErrorCode::kFormat, label + ": the graph has no outputs");
  // NOTE [Ragged outputs]: each narrowed output's length, as a hidden output after the model's own.
  for (ir::RaggedOutput& r : ragged) {
    NodeCtx c{m, ::onnx::NodeProto::default_instance(), {}, label + ": the length of output " + std::to_string(r.output)};
    const uint32_t id = m.emit(c, OpId::k_copy, {r.length});
    m.g.values[id].name = m.g.values[m.g.outputs[r.output]].name + ":length";
    r.length = (uint32_t)m.g.outputs.size();
    m.g.outputs.push_back(id);
  }
  if (used) *used = m.used;
  // An input's value was only for the mapping: the executor reads the tensor predict gives.
  for (uint32_t id : m.g.inputs) m.g.values[id].data = Tensor();
  return std::move(m.g);
}

bool is_initializer(const ::onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer())
    if (t.name() == name) return true;
  return false;
}

ir::Model map_model(const ModelProto& model, const std::string& label, const std::map<std::string, Tensor>* given = nullptr,
                    std::set<std::string>* used = nullptr) {
  if (!model.has_graph()) fail(ErrorCode::kFormat, label + ": not an ONNX model (it has no graph)");
  const int64_t opset = default_opset(model, label);
  if (given) {  // every input given: fixed shapes, one mapping
    ir::Model out;
    out.producer_name = model.producer_name().empty() ? "onnx" : model.producer_name();
    out.graph = map_graph(model, label, opset, out.ragged, given, used);
    return out;
  }
  ir::Model out;
  out.producer_name = model.producer_name().empty() ? "onnx" : model.producer_name();
  out.producer_version = model.producer_version();
  check_ops_mapped(model.graph(), label, 0);
  // A symbolic input extent: mapped at predict from the real inputs' shapes, never from stand-in
  // extents (NOTE [ONNX dynamic shapes]); the ops were checked above, so unmapped ones are still
  // refused at load.
  for (const auto& in : model.graph().input()) {
    if (!in.type().has_tensor_type() || !in.type().tensor_type().has_shape()) continue;
    const auto& shape = in.type().tensor_type().shape();
    for (int d = 0; d < shape.dim_size(); ++d)
      if (!fixed_extent(shape.dim(d)) && !is_initializer(model.graph(), in.name()))
        throw InputValueNeeded("", label + ": input '" + in.name() + "' has the symbolic input dimension '" +
                                       dim_symbol(shape.dim(d), in.name(), d) +
                                       "'; the graph is mapped when predict gives the shapes");
  }
  std::vector<std::string> carried;
  out.graph = map_graph(model, label, opset, out.ragged, nullptr, nullptr, &carried);
  out.metadata.emplace_back("onnx.opset", std::to_string(opset));
  for (size_t k = 0; k < carried.size(); ++k)
    if (!carried[k].empty()) out.metadata.emplace_back(carried_output_key(k), carried[k]);
  for (const auto& p : model.metadata_props()) out.metadata.emplace_back(p.key(), p.value());
  return out;
}

}  // namespace detail

using namespace detail;

bool onnx_op_mapped(const std::string& op_type) { return handlers().count(op_type) > 0; }

namespace {
ModelProto parse(std::span<const uint8_t> bytes, const std::string& label) {
  ModelProto model;
  if (bytes.size() > (size_t)std::numeric_limits<int>::max())
    fail(ErrorCode::kUnsupported, label + ": an ONNX file over 2 GiB (protobuf's limit) must keep its weights as external data");
  if (!model.ParseFromArray(bytes.data(), (int)bytes.size()))
    fail(ErrorCode::kFormat, label + ": not an ONNX model (the protobuf does not parse: truncated or not ONNX)");
  return model;
}

ir::Value declared(const ::onnx::ValueInfoProto& v) {
  ir::Value out{v.name(), ir::ValueKind::kInput, DType::kFloat32, {}, {}};
  if (!v.type().has_tensor_type()) return out;
  const auto& tt = v.type().tensor_type();
  value_dtype_of(tt.elem_type(), out.dtype);
  for (int d = 0; tt.has_shape() && d < tt.shape().dim_size(); ++d) {
    const auto& dim = tt.shape().dim(d);
    if (fixed_extent(dim)) out.dims.push_back({dim.dim_value(), {}});
    else out.dims.push_back({-1, dim_symbol(dim, v.name(), d)});
  }
  return out;
}
}  // namespace

ir::Model read_onnx_bytes(std::span<const uint8_t> bytes, const std::string& label) { return map_model(parse(bytes, label), label); }

ir::Model read_onnx_with_inputs(std::span<const uint8_t> bytes, const std::string& label, const std::map<std::string, Tensor>& inputs,
                                std::vector<std::string>* used) {
  std::set<std::string> read;
  ir::Model m = map_model(parse(bytes, label), label, &inputs, &read);
  if (used) used->assign(read.begin(), read.end());
  return m;
}

std::string carried_output_key(size_t k) { return "onnx.carried_output." + std::to_string(k); }

std::pair<std::vector<ir::Value>, std::vector<ir::Value>> onnx_signature(std::span<const uint8_t> bytes, const std::string& label,
                                                                         std::vector<std::string>* carried_outputs) {
  const ModelProto model = parse(bytes, label);
  if (carried_outputs) {
    carried_outputs->clear();
    for (const auto& v : model.graph().output()) {
      const Carried* ct = v.type().has_tensor_type() ? carried_type(v.type().tensor_type().elem_type()) : nullptr;
      carried_outputs->push_back(ct ? ct->name : "");
    }
  }
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::pair<std::vector<ir::Value>, std::vector<ir::Value>> out;
  for (const auto& v : model.graph().input())
    if (!initializers.count(v.name())) out.first.push_back(declared(v));
  for (const auto& v : model.graph().output()) out.second.push_back(declared(v));
  return out;
}

ir::Model read_onnx(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIO, "cannot open ONNX file " + path.string());
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return read_onnx_bytes(bytes, path.string());
}

}  // namespace spore::onnx
