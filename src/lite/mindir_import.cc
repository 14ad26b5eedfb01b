// MindIR in (NOTE [MindIR]): a MindSpore ModelProto mapped node by node onto registry ops, into
// Spore's IR model, which Lite's executor then plans and runs like any Spore IR file.
//
// A MindIR graph names every value by a string. Its nodes are either "Constant" (a scalar, a
// tuple of ints, a type id, a tensor, or a monad) or "REF::<name>", a reference to one of the
// model's PrimitiveProtos, whose op_type is the operator. Since version 2 most operators are
// primitive functions: their arguments (MatMul's transposes, Softmax's axis) arrive as Constant
// inputs; in version 1 the same arguments are attributes of the primitive. The mapper reads an
// argument from either place, so one table serves versions 1 to 3.
//
// The bookkeeping nodes carry no computation: Load(param, monad) is the parameter, Depend(x, ...)
// is x, and UpdateState/MakeTuple only order side effects (the monad chain), which an inference
// graph without side effects does not need. Shapes come from the registry's own inference as the
// mapping goes, on placeholder tensors (one element broadcast: no memory of the shape's size).
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>

#include "lite/import_graph.h"
#include "mindspore/mind_ir.pb.h"
#include "spore/error.h"
#include "spore/mindir.h"
#include "spore/ops.h"

namespace spore::mindir {
namespace {

using spore_mindir::AttributeProto;
using spore_mindir::ModelProto;
using spore_mindir::NodeProto;
using spore_mindir::PrimitiveProto;
using spore_mindir::TensorProto;


[[noreturn]] void fail(ErrorCode code, const std::string& what) { throw Error(code, what); }

// MindIR's TensorProto.DataType -> Spore's dtype; false when Spore has none.
bool dtype_of(int32_t t, DType& out) {
  switch (t) {
    case TensorProto::FLOAT: out = DType::kFloat32; return true;
    case TensorProto::DOUBLE:
    case TensorProto::FLOAT64: out = DType::kFloat64; return true;
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

std::string type_name(int32_t t) {
  return TensorProto::DataType_IsValid(t) ? TensorProto::DataType_Name((TensorProto::DataType)t) : "type " + std::to_string(t);
}

// MindSpore's TypeId numbers, as a Cast's destination type is written (a Constant INT64): the
// values MindSpore 2.10 writes for ops.cast to each dtype (kNumberTypeBool 30 ... BFloat16 45).
bool dtype_of_type_id(int64_t id, DType& out) {
  switch (id) {
    case 30: out = DType::kBool; return true;
    case 32: out = DType::kInt8; return true;
    case 34: out = DType::kInt32; return true;
    case 35: out = DType::kInt64; return true;
    case 37: out = DType::kUInt8; return true;
    case 42: out = DType::kFloat16; return true;
    case 43: out = DType::kFloat32; return true;
    case 44: out = DType::kFloat64; return true;
    case 45: out = DType::kBFloat16; return true;
    default: return false;
  }
}

int64_t checked_numel(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  return lite::checked_numel(dims, what, [&](int64_t d) {
    fail(ErrorCode::kUnsupported,
         what + " has the dynamic extent " + std::to_string(d) + "; export the network from MindSpore with a fixed input shape");
  });
}

// A parameter's (or a Constant tensor's) data, copied out of the protobuf.
Tensor tensor_of(const TensorProto& t, const std::string& what) {
  DType dtype;
  if (!dtype_of(t.data_type(), dtype))
    fail(ErrorCode::kUnsupported, what + " has dtype " + type_name(t.data_type()) + ", which Spore has no dtype for");
  if (t.has_external_data())
    fail(ErrorCode::kUnsupported, what + " keeps its data in an external file; export it from MindSpore into one file");
  if (t.compression_type() != TensorProto::NO_COMPRESSION || t.quant_params_size() > 0)
    fail(ErrorCode::kUnsupported, what + " is compressed or quantized (" +
                                      TensorProto::CompressionType_Name(t.compression_type()) + "); export it uncompressed");
  const int64_t n = checked_numel(t.dims(), what);
  const size_t bytes = (size_t)n * dtype_size(dtype);
  // The data must match the shape before anything is allocated: a hostile file may declare a
  // huge shape and carry no data.
  const bool raw = t.has_raw_data();
  if (raw && t.raw_data().size() != bytes)
    fail(ErrorCode::kFormat, what + " holds " + std::to_string(t.raw_data().size()) + " bytes of data; its shape and dtype need " +
                                 std::to_string(bytes));
  if (!raw && !(dtype == DType::kFloat32 && t.float_data_size() == n) && !(dtype == DType::kInt64 && t.int64_data_size() == n) &&
      !(dtype == DType::kInt32 && t.int32_data_size() == n) && !(dtype == DType::kFloat64 && t.double_data_size() == n))
    fail(ErrorCode::kFormat, what + " holds no data matching its shape of " + std::to_string(n) + " " + dtype_name(dtype) + " elements");
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  Tensor out = Tensor::empty(Shape(dims), dtype, Device::cpu());
  if (bytes == 0) return out;
  const void* src = raw                         ? (const void*)t.raw_data().data()
                    : dtype == DType::kFloat32 ? (const void*)t.float_data().data()
                    : dtype == DType::kInt64   ? (const void*)t.int64_data().data()
                    : dtype == DType::kInt32   ? (const void*)t.int32_data().data()
                                               : (const void*)t.double_data().data();
  std::memcpy(out.data_ptr(), src, bytes);
  return out;
}

// What a MindIR name stands for while mapping: a tensor value of the IR graph, or one of the
// non-tensor things Constant nodes and primitive attributes carry.
struct Ref {
  enum Kind { kTensor, kMonad, kInt, kFloat, kString, kInts, kTuple, kNone } kind = kNone;
  uint32_t id = 0;  // kTensor
  int64_t i = 0;
  double f = 0;
  std::string s;
  std::vector<int64_t> ints;
  std::vector<Ref> elems;  // kTuple made by MakeTuple: its elements (a network's several outputs)
  const char* kind_name() const {
    static const char* names[] = {"a tensor", "a monad", "an int", "a float", "a string", "a tuple of ints", "a tuple", "None"};
    return names[kind];
  }
};

// An attribute's value (a Constant's "value", a primitive's argument). Scalars of any integer
// type and BOOL are ints; a TUPLE or LIST of integer scalars (MindSpore writes each element with
// its value in `ints` or `i`) is a tuple of ints; a TENSOR is returned through `tensor`.
Ref attr_value(const AttributeProto& a, const std::string& what, bool allow_tuple = true) {
  Ref r;
  switch (a.type()) {
    case AttributeProto::UMONAD:
    case AttributeProto::IOMONAD: r.kind = Ref::kMonad; return r;
    case AttributeProto::NONE: r.kind = Ref::kNone; return r;
    case AttributeProto::BOOL:
    case AttributeProto::INT8:
    case AttributeProto::INT16:
    case AttributeProto::INT32:
    case AttributeProto::INT64:
    case AttributeProto::UINT8:
    case AttributeProto::UINT16:
    case AttributeProto::UINT32:
    case AttributeProto::UINT64:
      r.kind = Ref::kInt;
      r.i = a.ints_size() == 1 ? a.ints(0) : a.i();
      return r;
    case AttributeProto::FLOAT:
      r.kind = Ref::kFloat;
      r.f = a.floats_size() == 1 ? a.floats(0) : a.f();
      return r;
    case AttributeProto::DOUBLE:
      r.kind = Ref::kFloat;
      r.f = a.doubles_size() == 1 ? a.doubles(0) : a.d();
      return r;
    case AttributeProto::STRING:
      r.kind = Ref::kString;
      r.s = a.strings_size() == 1 ? a.strings(0) : a.s();
      return r;
    case AttributeProto::TUPLE:
    case AttributeProto::LIST:
      if (!allow_tuple) break;
      r.kind = Ref::kInts;
      for (const AttributeProto& e : a.values()) {
        const Ref v = attr_value(e, what, false);
        if (v.kind != Ref::kInt) {
          r.kind = Ref::kTuple;  // strings (input_names) and the like: kept, never read as ints
          r.ints.clear();
          return r;
        }
        r.ints.push_back(v.i);
      }
      return r;
    default: break;
  }
  fail(ErrorCode::kUnsupported, what + " has a value of type " +
                                    (AttributeProto::AttributeType_IsValid(a.type()) ? AttributeProto::AttributeType_Name(a.type())
                                                                                     : std::to_string(a.type())) +
                                    ", which Spore does not map");
}

struct Mapper;

// One node being mapped: its primitive, its inputs and helpers for its arguments.
struct NodeCtx {
  Mapper& m;
  const NodeProto& node;
  const PrimitiveProto* prim;  // null for a node whose op_type names the operator directly
  std::string op;              // the operator ("MatMul")
  std::vector<const Ref*> in;
  std::string where;           // "node 3 (MatMul 'name')"

  [[noreturn]] void unsupported(const std::string& what) const {
    fail(ErrorCode::kUnsupported, where + ": " + what + " is not mapped onto Spore's ops");
  }
  [[noreturn]] void bad(const std::string& what) const { fail(ErrorCode::kFormat, where + ": " + what); }

  const AttributeProto* find_attr(const std::string& name) const {
    if (prim)
      for (const AttributeProto& a : prim->attribute())
        if (a.name() == name) return &a;
    for (const AttributeProto& a : node.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  // Argument k of a primitive function (a Constant input), or, in the version-1 form, the
  // primitive's attribute `name`; nullopt when neither is there.
  std::optional<Ref> arg(size_t k, const std::string& name) const {
    if (k < in.size()) {
      if (in[k]->kind == Ref::kTensor) unsupported("a computed " + name + " (argument " + std::to_string(k) + ")");
      return *in[k];
    }
    if (const AttributeProto* a = find_attr(name)) return attr_value(*a, where + ": attribute '" + name + "'");
    return std::nullopt;
  }
  int64_t int_arg(size_t k, const std::string& name, std::optional<int64_t> dflt = std::nullopt) const {
    const std::optional<Ref> r = arg(k, name);
    if (!r) {
      if (dflt) return *dflt;
      bad("argument '" + name + "' is missing");
    }
    if (r->kind != Ref::kInt) bad("argument '" + name + "' is " + r->kind_name() + ", not an int");
    return r->i;
  }
  std::vector<int64_t> ints_arg(size_t k, const std::string& name) const {
    const std::optional<Ref> r = arg(k, name);
    if (!r) bad("argument '" + name + "' is missing");
    if (r->kind == Ref::kInt) return {r->i};
    if (r->kind != Ref::kInts) bad("argument '" + name + "' is " + r->kind_name() + ", not a tuple of ints");
    return r->ints;
  }
  std::string string_arg(const std::string& name, const std::string& dflt) const {
    const AttributeProto* a = find_attr(name);
    if (!a) return dflt;
    const Ref r = attr_value(*a, where + ": attribute '" + name + "'");
    if (r.kind != Ref::kString) bad("attribute '" + name + "' is " + r.kind_name() + ", not a string");
    return r.s;
  }
  // Tensor input k.
  uint32_t at(size_t k) const {
    if (k >= in.size()) bad("takes at least " + std::to_string(k + 1) + " inputs; it has " + std::to_string(in.size()));
    if (in[k]->kind != Ref::kTensor) bad("input " + std::to_string(k) + " is " + in[k]->kind_name() + ", not a tensor");
    return in[k]->id;
  }
};

struct Mapper : lite::GraphBuilder {
  std::string label;

  // Emits one registry op; its output gets its shape from the registry's inference.
  uint32_t emit(const NodeCtx& c, OpId op, const std::vector<uint32_t>& ins, const Attrs& attrs = {}) {
    const OpDef& def = op_def(op);
    return add_node(c.where, def, ins, attrs, infer(c.where, def, probes(ins), attrs), 1)[0];
  }
  uint32_t permute2(const NodeCtx& c, uint32_t x) {
    const int r = shape(x).ndim();
    if (r < 2) c.bad("transposes an input of rank " + std::to_string(r));
    std::vector<int64_t> axes;
    for (int d = 0; d < r; ++d) axes.push_back(d);
    std::swap(axes[r - 1], axes[r - 2]);
    return emit(c, OpId::k_permute, {x}, Attrs::of(axes));
  }
};

// ---- the mapping table ----------------------------------------------------------------------
using Handler = uint32_t (*)(NodeCtx&);

uint32_t add(NodeCtx& c) { return c.m.emit(c, OpId::k_add, {c.at(0), c.at(1)}); }
uint32_t relu(NodeCtx& c) { return c.m.emit(c, OpId::k_relu, {c.at(0)}); }

// MatMul(a, b, transpose_a, transpose_b): 2-D as MindSpore's MatMul; MatMulExt (ops.matmul since
// 2.3) is numpy's matmul, the registry's matmul as it is.
uint32_t matmul(NodeCtx& c) {
  uint32_t a = c.at(0), b = c.at(1);
  if (c.op == "MatMul") {
    if (c.int_arg(2, "transpose_a", 0)) a = c.m.permute2(c, a);
    if (c.int_arg(3, "transpose_b", 0)) b = c.m.permute2(c, b);
  }
  return c.m.emit(c, OpId::k_matmul, {a, b});
}

// The data_format argument: MindSpore's Format enum as an int (0 is NCHW) or, in version 1, the
// string. Spore's spatial ops are NCHW only.
void require_nchw(NodeCtx& c, size_t k) {
  const std::optional<Ref> f = c.arg(k, "data_format");
  const std::string s = c.string_arg("format", "NCHW");
  if (s != "NCHW") c.unsupported("format '" + s + "'");
  if (!f || (f->kind == Ref::kInt && f->i == 0) || (f->kind == Ref::kString && f->s == "NCHW")) return;
  c.unsupported("data_format " + (f->kind == Ref::kString ? "'" + f->s + "'" : std::to_string(f->i)) + " (Spore is NCHW)");
}

// BiasAdd(x, b, data_format): b along the channel dimension (1 for NCHW; the last for rank 2).
uint32_t bias_add(NodeCtx& c) {
  const uint32_t x = c.at(0), b = c.at(1);
  require_nchw(c, 2);
  const int r = c.m.shape(x).ndim();
  if (r < 2) c.bad("BiasAdd of a rank-" + std::to_string(r) + " input");
  if (c.m.shape(b).ndim() != 1 || c.m.shape(b)[0] != c.m.shape(x)[1])
    c.bad("bias of shape " + c.m.shape(b).str() + " for an input of shape " + c.m.shape(x).str());
  std::vector<int64_t> to = {-1};
  for (int d = 2; d < r; ++d) to.push_back(1);
  const uint32_t bb = r == 2 ? b : c.m.emit(c, OpId::k_reshape, {b}, Attrs::of(to));
  return c.m.emit(c, OpId::k_add, {x, bb});
}

// Dense(x, w, b): x @ w^T + b, w of shape [out, in].
uint32_t dense(NodeCtx& c) {
  uint32_t y = c.m.emit(c, OpId::k_matmul, {c.at(0), c.m.permute2(c, c.at(1))});
  if (c.in.size() > 2 && c.in[2]->kind == Ref::kTensor) y = c.m.emit(c, OpId::k_add, {y, c.at(2)});
  return y;
}

// The spatial pair of a 2- or 4-value tuple (MindSpore writes (1, 1, h, w) for the primitives).
std::vector<int64_t> spatial(NodeCtx& c, const std::vector<int64_t>& v, const std::string& name) {
  if (v.size() == 1) return {v[0], v[0]};
  if (v.size() == 2) return v;
  if (v.size() == 4) return {v[2], v[3]};
  c.bad(name + " has " + std::to_string(v.size()) + " values");
}

// "same" padding as MindSpore computes it, per spatial dimension: (before, after).
std::pair<int64_t, int64_t> same_pad(int64_t in, int64_t k, int64_t s, int64_t d) {
  const int64_t out = (in + s - 1) / s, need = std::max<int64_t>((out - 1) * s + (k - 1) * d + 1 - in, 0);
  return {need / 2, need - need / 2};
}

// pad_mode: a string in version 1 and in the PRIMITIVE ops (Conv2D, MaxPool), MindSpore's PadMode
// enum as an int in primitive functions (PAD 0, SAME 1, VALID 2).
std::string pad_mode_of(NodeCtx& c, size_t k) {
  const std::optional<Ref> r = c.arg(k, "pad_mode");
  if (!r) return "valid";
  std::string s;
  if (r->kind == Ref::kString) s = r->s;
  else if (r->kind == Ref::kInt && r->i >= 0 && r->i <= 2) s = r->i == 0 ? "pad" : r->i == 1 ? "same" : "valid";
  else c.bad("pad_mode is " + std::string(r->kind_name()));
  for (char& ch : s) ch = (char)std::tolower((unsigned char)ch);
  if (s != "pad" && s != "same" && s != "valid") c.bad("pad_mode '" + s + "'");
  return s;
}

// x with `begin` and `end` cells of `value` added along `axis` (a fill and a concat).
uint32_t pad_axis(NodeCtx& c, uint32_t x, int axis, int64_t begin, int64_t end, double value) {
  std::vector<uint32_t> parts;
  auto block = [&](int64_t extent) {
    const Shape& s = c.m.shape(x);
    std::vector<int64_t> shape(s.begin(), s.end());
    shape[axis] = extent;
    return c.m.emit(c, OpId::k_fill, {}, Attrs::of(shape, value, c.m.dtype(x)));
  };
  if (begin > 0) parts.push_back(block(begin));
  parts.push_back(x);
  if (end > 0) parts.push_back(block(end));
  return parts.size() > 1 ? c.m.emit(c, OpId::k_concat, parts, Attrs::of((int64_t)axis)) : x;
}

// Padding (top, bottom, left, right) for conv and pool: the registry's ops pad symmetrically (at
// most half the kernel for pooling); any other padding is added explicitly first, with `value`
// (zeros for convolution, -inf for max pooling), and the op then pads nothing. `pads` receives the
// op's symmetric pair. Explicit padding is refused for average pooling, whose divisor would count it.
uint32_t padded(NodeCtx& c, uint32_t x, std::array<int64_t, 4> p, const std::vector<int64_t>& kernel, double value, bool explicit_ok,
                std::vector<int64_t>& pads) {
  for (int64_t v : p)
    if (v < 0 || v > (int64_t{1} << 20)) c.bad("padding " + std::to_string(v) + " is out of range");
  const bool pool = !kernel.empty();
  if (p[0] == p[1] && p[2] == p[3] && (!pool || (2 * p[0] <= kernel[0] && 2 * p[2] <= kernel[1]))) {
    pads = {p[0], p[2]};
    return x;
  }
  if (!explicit_ok)
    c.unsupported("padding (" + std::to_string(p[0]) + ", " + std::to_string(p[1]) + ", " + std::to_string(p[2]) + ", " +
                  std::to_string(p[3]) + ") in average pooling (asymmetric or wider than half the kernel)");
  pads = {0, 0};
  return pad_axis(c, pad_axis(c, x, 2, p[0], p[1], value), 3, p[2], p[3], value);
}

// Conv2D(x, w) with the primitive's attributes; its bias is a BiasAdd after it.
uint32_t conv2d(NodeCtx& c) {
  uint32_t x = c.at(0);
  const uint32_t w = c.at(1);
  require_nchw(c, 99);
  if (c.m.shape(x).ndim() != 4 || c.m.shape(w).ndim() != 4) c.bad("Conv2D takes 4-D input and weight");
  const std::vector<int64_t> stride = spatial(c, c.ints_arg(99, "stride"), "stride");
  const std::vector<int64_t> dil = spatial(c, c.ints_arg(99, "dilation"), "dilation");
  const int64_t group = c.int_arg(99, "group", 1);
  const std::string mode = pad_mode_of(c, 99);
  const int64_t kh = c.m.shape(w)[2], kw = c.m.shape(w)[3];
  std::vector<int64_t> pads = {0, 0};
  if (mode == "pad") {
    const std::vector<int64_t> p = c.ints_arg(99, "pad");
    if (p.size() != 4) c.bad("pad has " + std::to_string(p.size()) + " values");
    x = padded(c, x, {p[0], p[1], p[2], p[3]}, {}, 0.0, true, pads);
  } else if (mode == "same") {
    if (stride[0] <= 0 || stride[1] <= 0 || dil[0] <= 0 || dil[1] <= 0) c.bad("stride and dilation must be positive");
    auto [t, b] = same_pad(c.m.shape(x)[2], kh, stride[0], dil[0]);
    auto [l, r] = same_pad(c.m.shape(x)[3], kw, stride[1], dil[1]);
    x = padded(c, x, {t, b, l, r}, {}, 0.0, true, pads);
  }
  return c.m.emit(c, OpId::k_conv2d, {x, w}, Attrs::of(stride, pads, dil, group));
}

// MaxPool (a PRIMITIVE: kernel_size, strides, pad_mode attributes) and AvgPool (a primitive
// function: x, kernel_size, strides, pad_mode, data_format). Spore's average divides by the cells
// inside the input, which is MindSpore's "same" average too.
uint32_t pool(NodeCtx& c) {
  const bool avg = c.op == "AvgPool";
  uint32_t x = c.at(0);
  if (c.m.shape(x).ndim() != 4) c.bad("pooling takes a 4-D input");
  require_nchw(c, 4);
  const std::vector<int64_t> kernel = spatial(c, c.ints_arg(1, "kernel_size"), "kernel_size");
  const std::vector<int64_t> strides = spatial(c, c.ints_arg(2, "strides"), "strides");
  const std::string mode = pad_mode_of(c, 3);
  std::vector<int64_t> pads = {0, 0};
  if (mode == "pad") c.unsupported("pad_mode 'pad' in pooling");
  if (mode == "same") {
    if (strides[0] <= 0 || strides[1] <= 0) c.bad("strides must be positive");
    auto [t, b] = same_pad(c.m.shape(x)[2], kernel[0], strides[0], 1);
    auto [l, r] = same_pad(c.m.shape(x)[3], kernel[1], strides[1], 1);
    x = padded(c, x, {t, b, l, r}, kernel, -INFINITY, !avg, pads);
  }
  return c.m.emit(c, avg ? OpId::k_avg_pool2d : OpId::k_max_pool2d, {x}, Attrs::of(kernel, strides, pads, false));
}

// BatchNorm in inference (x, scale, bias, mean, variance, is_training, epsilon, momentum,
// data_format): y = x * a + b per channel, a = scale * rsqrt(variance + epsilon), b = bias -
// mean * a. With the statistics as parameters (an exported network), a and b are computed once
// here with the registry's own kernels; otherwise they are ops of the graph. MindSpore's node
// returns a tuple whose element 0 is y (TupleGetItem); the batch statistics of training are not.
uint32_t batch_norm(NodeCtx& c) {
  const uint32_t x = c.at(0);
  if (c.int_arg(5, "is_training", 0) != 0) c.unsupported("BatchNorm in training mode");
  const std::optional<Ref> eps_ref = c.arg(6, "epsilon");
  double eps = 1e-5;
  if (eps_ref) {
    if (eps_ref->kind != Ref::kFloat) c.bad("epsilon is " + std::string(eps_ref->kind_name()) + ", not a float");
    eps = eps_ref->f;
  }
  require_nchw(c, 8);
  const int r = c.m.shape(x).ndim();
  if (r < 2) c.bad("BatchNorm of a rank-" + std::to_string(r) + " input");
  const int64_t channels = c.m.shape(x)[1];
  std::vector<int64_t> per_channel = {channels};
  for (int d = 2; d < r; ++d) per_channel.push_back(1);
  uint32_t stats[4];
  bool known = true;
  for (int k = 0; k < 4; ++k) {
    stats[k] = c.at(1 + k);
    const Shape& s = c.m.shape(stats[k]);
    if (s.ndim() != 1 || s[0] != channels)
      c.bad("BatchNorm's argument " + std::to_string(1 + k) + " has shape " + s.str() + " for " + std::to_string(channels) + " channels");
    known = known && c.m.g.values[stats[k]].data.defined();
  }
  uint32_t a, b;
  if (known) {
    const auto& v = c.m.g.values;
    const Tensor ta = mul(v[stats[0]].data, rsqrt(add(v[stats[3]].data, eps)));
    const Tensor tb = sub(v[stats[1]].data, mul(v[stats[2]].data, ta));
    a = c.m.constant(reshape(ta, per_channel).contiguous());
    b = c.m.constant(reshape(tb, per_channel).contiguous());
  } else {
    const uint32_t e = c.m.constant(full({}, eps, c.m.dtype(stats[3])));
    const uint32_t inv = c.m.emit(c, OpId::k_rsqrt, {c.m.emit(c, OpId::k_add, {stats[3], e})});
    const uint32_t ta = c.m.emit(c, OpId::k_mul, {stats[0], inv});
    const uint32_t tb = c.m.emit(c, OpId::k_sub, {stats[1], c.m.emit(c, OpId::k_mul, {stats[2], ta})});
    a = c.m.emit(c, OpId::k_reshape, {ta}, Attrs::of(per_channel));
    b = c.m.emit(c, OpId::k_reshape, {tb}, Attrs::of(per_channel));
  }
  return c.m.emit(c, OpId::k_add, {c.m.emit(c, OpId::k_mul, {x, a}), b});
}

uint32_t relu6(NodeCtx& c) { return c.m.emit(c, OpId::k_relu6, {c.at(0)}); }

// ReduceMean(x, axis, keep_dims): an empty axis tuple is every axis.
uint32_t reduce_mean(NodeCtx& c) {
  const uint32_t x = c.at(0);
  std::vector<int64_t> axes = c.ints_arg(1, "axis");
  if (axes.empty())
    for (int d = 0; d < c.m.shape(x).ndim(); ++d) axes.push_back(d);
  return c.m.emit(c, OpId::k_mean, {x}, Attrs::of(axes, c.int_arg(2, "keep_dims", 0) != 0));
}

uint32_t softmax(NodeCtx& c) {
  const std::vector<int64_t> axis = c.ints_arg(1, "axis");
  if (axis.size() != 1) c.unsupported("softmax over " + std::to_string(axis.size()) + " axes");
  return c.m.emit(c, OpId::k_softmax, {c.at(0)}, Attrs::of(axis[0]));
}

uint32_t cast(NodeCtx& c) {
  const int64_t id = c.int_arg(1, "dst_type");
  DType t;
  if (!dtype_of_type_id(id, t)) c.unsupported("Cast to MindSpore type id " + std::to_string(id));
  return c.m.dtype(c.at(0)) == t ? c.m.emit(c, OpId::k_copy, {c.at(0)}) : c.m.emit(c, OpId::k_cast, {c.at(0)}, Attrs::of(t));
}

uint32_t reshape(NodeCtx& c) { return c.m.emit(c, OpId::k_reshape, {c.at(0)}, Attrs::of(c.ints_arg(1, "shape"))); }

// Flatten: [N, ...] -> [N, prod(...)].
uint32_t flatten(NodeCtx& c) {
  const Shape& s = c.m.shape(c.at(0));
  if (s.ndim() < 1) c.bad("Flatten of a scalar");
  return c.m.emit(c, OpId::k_reshape, {c.at(0)}, Attrs::of(std::vector<int64_t>{s[0], -1}));
}

const std::map<std::string, Handler>& table() {
  static const std::map<std::string, Handler> t = {
      {"Add", add},         {"BiasAdd", bias_add}, {"ReLU", relu},         {"MatMul", matmul},   {"MatMulExt", matmul},
      {"Dense", dense},     {"Conv2D", conv2d},    {"MaxPool", pool},       {"AvgPool", pool},    {"Softmax", softmax},
      {"Cast", cast},       {"Reshape", reshape},  {"Flatten", flatten},  {"BatchNorm", batch_norm}, {"ReLU6", relu6},
      {"ReduceMean", reduce_mean},
  };
  return t;
}

// The tail of a MindIR value name after the graph's name ("<graph>:x" -> "x"): the names a user
// passes to `spore lite run --input`.
std::string short_name(const std::string& name, const std::string& graph) {
  if (!graph.empty() && name.size() > graph.size() + 1 && name.compare(0, graph.size(), graph) == 0 && name[graph.size()] == ':')
    return name.substr(graph.size() + 1);
  return name;
}

[[noreturn]] void refuse_version(const std::string& label, int64_t v) {
  const std::string versions = std::to_string(kOldestVersion) + " to " + std::to_string(kNewestVersion);
  if (v == 0)
    fail(ErrorCode::kVersion, label + ": the file carries no mind_ir_version (MindSpore before 2.0 wrote none); Spore Lite "
                                      "reads MindIR versions " + versions +
                                      ". Ways out: export the network again with MindSpore 2.0 or newer, or export it from "
                                      "Spore (spore::export_model) and load that");
  // The chapter's wording (MindSpore Lite's check), then what Spore's message adds: the versions
  // read and the ways out.
  fail(ErrorCode::kVersion, label + ": This software can only support the maximum mind ir version: " + std::to_string(kNewestVersion) +
                                    ", please install the latest version to support the mind ir version: " + std::to_string(v) +
                                    ". The file is MindIR version " + std::to_string(v) + "; Spore Lite reads MindIR versions " +
                                    versions + ". Ways out: export the network with a MindSpore that writes version " +
                                    std::to_string(kNewestVersion) +
                                    " or older (MindSpore 2.10 writes 3), or use a newer Spore Lite that reads version " +
                                    std::to_string(v));
}

ir::Model map_model(const ModelProto& mp, const std::string& label) {
  // The version before anything else in the file is looked at.
  const int64_t v = mp.mind_ir_version();
  if (v < kOldestVersion || v > kNewestVersion) refuse_version(label, v);
  if (!mp.has_graph()) fail(ErrorCode::kFormat, label + ": the MindIR file has no graph");
  if (mp.has_little_endian() && !mp.little_endian())
    fail(ErrorCode::kUnsupported, label + ": the MindIR file's data is big-endian; Spore reads little-endian files");
  const spore_mindir::GraphProto& gp = mp.graph();
  const std::string& gname = gp.name();

  std::map<std::string, const PrimitiveProto*> prims;
  for (const PrimitiveProto& p : mp.primitives()) prims.emplace(p.name(), &p);
  std::map<std::string, bool> functions;
  for (const auto& f : mp.functions()) functions.emplace(f.name(), true);

  Mapper m;
  m.label = label;
  std::map<std::string, Ref> names;
  auto define = [&](const std::string& name, Ref r, const std::string& what) {
    if (name.empty()) fail(ErrorCode::kFormat, label + ": " + what + " has an empty name");
    if (!names.emplace(name, std::move(r)).second) fail(ErrorCode::kFormat, label + ": " + what + " repeats the name '" + name + "'");
  };
  auto tensor_ref = [](uint32_t id) {
    Ref r;
    r.kind = Ref::kTensor;
    r.id = id;
    return r;
  };

  for (int k = 0; k < gp.input_size(); ++k) {
    const auto& in = gp.input(k);
    const std::string what = "graph input '" + in.name() + "'";
    if (in.tensor_size() != 1) fail(ErrorCode::kUnsupported, label + ": " + what + " is not a single tensor");
    const TensorProto& t = in.tensor(0);
    DType dtype;
    if (!dtype_of(t.data_type(), dtype))
      fail(ErrorCode::kUnsupported, label + ": " + what + " has dtype " + type_name(t.data_type()) + ", which Spore has no dtype for");
    checked_numel(t.dims(), label + ": " + what);
    const Shape shape(std::vector<int64_t>(t.dims().begin(), t.dims().end()));
    const uint32_t id = m.push({short_name(in.name(), gname), ir::ValueKind::kInput, dtype, Mapper::dims_of(shape), {}},
                               Mapper::placeholder(shape, dtype));
    m.g.inputs.push_back(id);
    define(in.name(), tensor_ref(id), what);
  }
  for (const TensorProto& p : gp.parameter()) {
    const std::string what = label + ": parameter '" + p.name() + "'";
    const uint32_t id = m.constant(tensor_of(p, what), ir::ValueKind::kParameter, p.has_ref_key() ? p.ref_key() : short_name(p.name(), gname));
    define(p.name(), tensor_ref(id), what);
  }
  if (gp.map_parameter_size() > 0) fail(ErrorCode::kUnsupported, label + ": the graph has map parameters (MapTensor)");

  for (int k = 0; k < gp.node_size(); ++k) {
    const NodeProto& node = gp.node(k);
    std::string op = node.op_type();
    const PrimitiveProto* prim = nullptr;
    if (op.rfind("REF::", 0) == 0) {
      const std::string ref = op.substr(5);
      auto it = prims.find(ref);
      if (it == prims.end()) {
        if (functions.count(ref))
          fail(ErrorCode::kUnsupported, label + ": node " + std::to_string(k) + " ('" + node.name() + "') calls the function graph '" +
                                            ref + "'; Spore maps single-graph MindIR files (no control flow or subgraphs)");
        fail(ErrorCode::kFormat, label + ": node " + std::to_string(k) + " ('" + node.name() + "') refers to the primitive '" + ref +
                                     "', which the file does not define");
      }
      prim = it->second;
      op = prim->op_type();
    }
    const std::string where = label + ": node " + std::to_string(k) + " (" + op + " '" + short_name(node.name(), gname) + "')";
    if (node.output_size() != 1) fail(ErrorCode::kUnsupported, where + " has " + std::to_string(node.output_size()) + " outputs");
    if (op == "Constant") {
      if (node.attribute_size() < 1) fail(ErrorCode::kFormat, where + " has no value");
      const AttributeProto& a = node.attribute(0);
      if (a.type() == AttributeProto::TENSOR) {
        define(node.output(0), tensor_ref(m.constant(tensor_of(a.t(), where))), where);
      } else {
        define(node.output(0), attr_value(a, where), where);
      }
      continue;
    }
    NodeCtx c{m, node, prim, op, {}, where};
    for (const std::string& name : node.input()) {
      auto it = names.find(name);
      if (it == names.end())
        fail(ErrorCode::kFormat, where + ": input '" + name + "' is not defined before the node (a dangling name or a cycle)");
      c.in.push_back(&it->second);
    }
    // The bookkeeping nodes (see the top of the file).
    if (op == "Load" || op == "Depend" || op == "Return") {
      if (c.in.empty()) c.bad(op + " has no input");
      define(node.output(0), *c.in[0], where);
      continue;
    }
    if (op == "UpdateState" || op == "MakeTuple") {
      Ref r;
      r.kind = Ref::kTuple;
      if (op == "MakeTuple")
        for (const Ref* e : c.in) r.elems.push_back(*e);
      define(node.output(0), r, where);
      continue;
    }
    if (op == "TupleGetItem") {
      const int64_t i = c.int_arg(1, "index");
      if (c.in.empty() || c.in[0]->kind != Ref::kTuple) c.bad("TupleGetItem of " + std::string(c.in.empty() ? "nothing" : c.in[0]->kind_name()));
      if (i < 0 || i >= (int64_t)c.in[0]->elems.size())
        c.bad("TupleGetItem index " + std::to_string(i) + " of a tuple of " + std::to_string(c.in[0]->elems.size()));
      define(node.output(0), c.in[0]->elems[(size_t)i], where);
      continue;
    }
    auto h = table().find(op);
    if (h == table().end()) c.unsupported("the primitive '" + op + "'");
    const uint32_t y = h->second(c);
    if (op == "BatchNorm") {  // (y, batch mean, batch variance, reserve 1, reserve 2): only y exists here
      Ref r;
      r.kind = Ref::kTuple;
      r.elems.push_back(tensor_ref(y));
      r.elems.resize(5);  // kNone: reading a training statistic is refused as "not a tensor"
      define(node.output(0), r, where);
      continue;
    }
    define(node.output(0), tensor_ref(y), where);
  }

  // The graph's outputs: tensors, or a tuple of tensors (MakeTuple) for a network that returns
  // several; each declared dtype and shape must be what the mapping computes (a cross-check of the
  // whole file). A declaration is a TensorProto, or for a tuple the attr_info's TENSORS values.
  std::vector<std::pair<uint32_t, const TensorProto*>> outs;
  for (int k = 0; k < gp.output_size(); ++k) {
    const auto& out = gp.output(k);
    const std::string what = label + ": graph output '" + short_name(out.name(), gname) + "'";
    auto it = names.find(out.name());
    if (it == names.end()) fail(ErrorCode::kFormat, what + " names no value of the graph");
    const Ref& r = it->second;
    if (r.kind == Ref::kTensor) {
      outs.push_back({r.id, out.tensor_size() == 1 ? &out.tensor(0) : nullptr});
      continue;
    }
    if (r.kind != Ref::kTuple || r.elems.empty()) fail(ErrorCode::kUnsupported, what + " is " + r.kind_name() + ", not a tensor");
    const auto& decl = out.attr_info().values();
    for (size_t e = 0; e < r.elems.size(); ++e) {
      if (r.elems[e].kind != Ref::kTensor)
        fail(ErrorCode::kUnsupported, what + ": element " + std::to_string(e) + " is " + r.elems[e].kind_name() + ", not a tensor");
      const TensorProto* t = (int)e < decl.size() && decl[(int)e].tensors_size() == 1 ? &decl[(int)e].tensors(0) : nullptr;
      outs.push_back({r.elems[e].id, t});
    }
  }
  if (outs.empty()) fail(ErrorCode::kFormat, label + ": the graph has no outputs");
  for (size_t k = 0; k < outs.size(); ++k) {
    auto [id, t] = outs[k];
    // MindSpore names outputs after internal nodes ("CNode_77:27"); Lite calls them output, or
    // output0, output1 ... (the names `spore lite run` writes its .npy files under).
    const std::string name = outs.size() == 1 ? "output" : "output" + std::to_string(k);
    const std::string what = label + ": graph " + name;
    if (t) {
      const std::vector<int64_t> declared(t->dims().begin(), t->dims().end());
      DType dt;
      const Shape& s = m.shape(id);
      if (declared != std::vector<int64_t>(s.begin(), s.end()) || !dtype_of(t->data_type(), dt) || dt != m.dtype(id))
        fail(ErrorCode::kFormat, what + " is declared " + type_name(t->data_type()) + Shape(declared).str() + " but computes " +
                                     dtype_name(m.dtype(id)) + s.str());
    }
    // An input or parameter returned as it is, or one value returned twice, gets a node of its own.
    bool taken = m.g.values[id].kind != ir::ValueKind::kNode;
    for (uint32_t o : m.g.outputs) taken = taken || o == id;
    if (taken) {
      NodeCtx c{m, NodeProto::default_instance(), nullptr, "Return", {}, what};
      id = m.emit(c, OpId::k_copy, {id});
    }
    m.g.values[id].name = name;
    m.g.outputs.push_back(id);
  }

  ir::Model model;
  model.producer_name = mp.producer_name().empty() ? "MindSpore" : mp.producer_name();
  model.producer_version = mp.model_version();
  model.metadata.push_back({"format", "mindir"});
  model.metadata.push_back({"mind_ir_version", std::to_string(v)});
  model.graph = std::move(m.g);
  return model;
}

bool parse(std::span<const uint8_t> bytes, ModelProto& mp) {
  if (bytes.size() > (size_t)std::numeric_limits<int>::max()) return false;
  return mp.ParseFromArray(bytes.data(), (int)bytes.size());
}

}  // namespace

ir::Model read_mindir_bytes(std::span<const uint8_t> bytes, const std::string& label) {
  ModelProto mp;
  if (!parse(bytes, mp))
    fail(ErrorCode::kFormat, label + ": not a MindIR file (the bytes do not parse as MindSpore's ModelProto; truncated or corrupt?)");
  return map_model(mp, label);
}

ir::Model read_mindir(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) fail(ErrorCode::kIO, "cannot open MindIR file " + path.string());
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return read_mindir_bytes(bytes, path.string());
}

bool looks_like_mindir(std::span<const uint8_t> bytes) {
  ModelProto mp;
  if (!parse(bytes, mp)) return false;
  return mp.has_graph() && (mp.producer_name() == "MindSpore" || mp.has_mind_ir_version());
}

}  // namespace spore::mindir
