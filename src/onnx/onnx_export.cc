// ONNX out (NOTE [ONNX]): the IR model export_model writes, translated node by node into an
// ONNX ModelProto at op set 17, validated by the ONNX library's own checker before it is written.
// Registry ops without a single ONNX equivalent are decomposed into ONNX ops (rsqrt, gelu, silu,
// var, rms_norm); ops with none at all (the fused, LLM-cache, quantized, random and training
// ops) are refused naming the op and node.
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "spore/error.h"
#include "spore/export.h"
#include "spore/format.h"
#include "spore/nn/cell.h"
#include "ops/reduce_attrs.h"

namespace spore {
namespace {

using ::onnx::AttributeProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

constexpr int64_t kOnnxOpset = 17;
constexpr int64_t kOnnxIrVersion = 8;  // what op set 17 goes with (ONNX 1.12)

[[noreturn]] void fail(ErrorCode code, const std::string& what) { throw Error(code, "export_onnx: " + what); }

int32_t onnx_type(DType t) {
  switch (t) {
    case DType::kBool: return TensorProto::BOOL;
    case DType::kInt8: return TensorProto::INT8;
    case DType::kUInt8: return TensorProto::UINT8;
    case DType::kInt32: return TensorProto::INT32;
    case DType::kInt64: return TensorProto::INT64;
    case DType::kFloat16: return TensorProto::FLOAT16;
    case DType::kBFloat16: return TensorProto::BFLOAT16;
    case DType::kFloat32: return TensorProto::FLOAT;
    case DType::kFloat64: return TensorProto::DOUBLE;
  }
  return TensorProto::UNDEFINED;
}

void fill_type(::onnx::TypeProto* type, const ir::Value& v) {
  auto* t = type->mutable_tensor_type();
  t->set_elem_type(onnx_type(v.dtype));
  auto* shape = t->mutable_shape();
  for (const ir::Dim& d : v.dims) {
    auto* dim = shape->add_dim();
    if (d.symbolic()) dim->set_dim_param(d.symbol);
    else dim->set_dim_value(d.extent);
  }
}

struct Writer {
  const ir::Graph& g;
  ::onnx::GraphProto* out;
  std::vector<std::string> names;  // per IR value
  std::set<std::string> used;
  int fresh_count = 0;
  std::string where;

  std::string fresh(const std::string& hint) {
    std::string n;
    do n = hint + "_" + std::to_string(fresh_count++);
    while (used.count(n));
    used.insert(n);
    return n;
  }
  void initializer(const std::string& name, const Tensor& data) {
    const Tensor c = data.contiguous();
    TensorProto* t = out->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx_type(c.dtype()));
    for (int64_t e : c.shape()) t->add_dims(e);
    t->set_raw_data(std::string(static_cast<const char*>(c.data_ptr()), c.nbytes()));
  }
  std::string ints(const std::vector<int64_t>& v) {
    const std::string n = fresh("const");
    initializer(n, Tensor::from_vector(v, Shape{(int64_t)v.size()}));
    return n;
  }
  // A 0-d constant of `t` (float64 value cast into the dtype).
  std::string scalar(double v, DType t) {
    const std::string n = fresh("const");
    Tensor s = Tensor::from_vector(std::vector<double>{v}, Shape{});
    initializer(n, t == DType::kFloat64 ? s : s.to(t));
    return n;
  }
  NodeProto* node(const std::string& op, const std::vector<std::string>& ins, const std::string& output) {
    NodeProto* n = out->add_node();
    n->set_op_type(op);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(output);
    return n;
  }
  // A node with a fresh output name; returns that name.
  std::string tmp(const std::string& op, const std::vector<std::string>& ins) {
    const std::string o = fresh(op);
    node(op, ins, o);
    return o;
  }
  static void attr(NodeProto* n, const std::string& name, int64_t v) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INT);
    a->set_i(v);
  }
  static void attr(NodeProto* n, const std::string& name, const std::vector<int64_t>& v) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::INTS);
    for (int64_t e : v) a->add_ints(e);
  }
  static void attr_s(NodeProto* n, const std::string& name, const std::string& v) {
    AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(AttributeProto::STRING);
    a->set_s(v);
  }
  // Value `id`'s name, cast to `t` when its dtype differs (ONNX ops take one dtype where the
  // registry promotes).
  std::string as(uint32_t id, DType t) {
    if (g.values[id].dtype == t) return names[id];
    NodeProto* n = node("Cast", {names[id]}, fresh("cast"));
    attr(n, "to", (int64_t)onnx_type(t));
    return n->output(0);
  }
  [[noreturn]] void unsupported(const std::string& why) { fail(ErrorCode::kUnsupported, where + ": " + why); }
};

std::vector<int64_t> pair2(const std::vector<int64_t>& v, std::vector<int64_t> dflt) {
  if (v.empty()) return dflt;
  return v.size() == 1 ? std::vector<int64_t>{v[0], v[0]} : v;
}

void write_node(Writer& w, const ir::Node& n) {
  const ir::Graph& g = w.g;
  const std::string& y = w.names[n.outputs.empty() ? 0 : n.outputs[0]];
  const DType yt = n.outputs.empty() ? DType::kFloat32 : g.values[n.outputs[0]].dtype;
  auto in = [&](int k) { return w.names[n.inputs[k]]; };
  auto in_as = [&](int k, DType t) { return w.as(n.inputs[k], t); };
  const Attrs& a = n.attrs;
  const std::string op = n.def->name;
  auto binary = [&](const char* onnx_op) { w.node(onnx_op, {in_as(0, yt), in_as(1, yt)}, y); };
  auto compare = [&](const char* onnx_op) {
    const DType t = promote_types(g.values[n.inputs[0]].dtype, g.values[n.inputs[1]].dtype);
    w.node(onnx_op, {in_as(0, t), in_as(1, t)}, y);
  };
  auto unary = [&](const char* onnx_op) { w.node(onnx_op, {in_as(0, yt)}, y); };
  auto reduce = [&](const char* onnx_op, bool axes_input) {
    const std::vector<int64_t>& axes = a.ints(0);
    std::vector<std::string> ins = {in_as(0, yt)};
    if (axes_input && !axes.empty()) ins.push_back(w.ints(axes));
    NodeProto* p = w.node(onnx_op, ins, y);
    if (!axes_input && !axes.empty()) Writer::attr(p, "axes", axes);
    Writer::attr(p, "keepdims", (int64_t)a.b(1));
  };
  // An op whose row names its one-to-one ONNX op (NOTE [Op facts]) is written by its kind: the
  // operands cast to the dtype ONNX's op takes, the same order, no attributes.
  if (const char* onnx_op = n.def->facts.onnx; onnx_op && *onnx_op) {
    switch (n.def->facts.fusion) {
      case Fusion::kArith: return binary(onnx_op);
      case Fusion::kCompare: return compare(onnx_op);
      case Fusion::kLogical: w.node(onnx_op, {in_as(0, DType::kBool), in_as(1, DType::kBool)}, y); return;
      case Fusion::kLogicalNot: w.node(onnx_op, {in_as(0, DType::kBool)}, y); return;
      case Fusion::kUnaryFloat:
      case Fusion::kUnaryKeep: return unary(onnx_op);
      case Fusion::kWhere: w.node(onnx_op, {in_as(0, DType::kBool), in_as(1, yt), in_as(2, yt)}, y); return;
      default: {  // the operands as they are (copy: Identity)
        std::vector<std::string> ins;
        for (size_t k = 0; k < n.inputs.size(); ++k) ins.push_back(in((int)k));
        w.node(onnx_op, ins, y);
        return;
      }
    }
  }
  switch (n.def->id) {
    case OpId::k_ne: {
      const DType t = promote_types(g.values[n.inputs[0]].dtype, g.values[n.inputs[1]].dtype);
      w.node("Not", {w.tmp("Equal", {in_as(0, t), in_as(1, t)})}, y);
      return;
    }
    case OpId::k_rsqrt: w.node("Reciprocal", {w.tmp("Sqrt", {in_as(0, yt)})}, y); return;
    case OpId::k_relu6: w.node("Clip", {in_as(0, yt), w.scalar(0, yt), w.scalar(6, yt)}, y); return;
    case OpId::k_gelu: {  // x * 0.5 * (1 + erf(x / sqrt(2))): op set 17 has no Gelu
      const std::string x = in_as(0, yt);
      const std::string e = w.tmp("Erf", {w.tmp("Div", {x, w.scalar(std::sqrt(2.0), yt)})});
      w.node("Mul", {x, w.tmp("Mul", {w.scalar(0.5, yt), w.tmp("Add", {w.scalar(1, yt), e})})}, y);
      return;
    }
    case OpId::k_gelu_tanh: {  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
      const std::string x = in_as(0, yt);
      const std::string x3 = w.tmp("Mul", {x, w.tmp("Mul", {x, x})});
      const std::string u = w.tmp("Mul", {w.scalar(std::sqrt(2.0 / M_PI), yt), w.tmp("Add", {x, w.tmp("Mul", {w.scalar(0.044715, yt), x3})})});
      w.node("Mul", {w.tmp("Mul", {w.scalar(0.5, yt), x}), w.tmp("Add", {w.scalar(1, yt), w.tmp("Tanh", {u})})}, y);
      return;
    }
    case OpId::k_silu: {
      const std::string x = in_as(0, yt);
      w.node("Mul", {x, w.tmp("Sigmoid", {x})}, y);
      return;
    }
    case OpId::k_cast: Writer::attr(w.node("Cast", {in(0)}, y), "to", (int64_t)onnx_type(a.dtype(0))); return;
    case OpId::k_sum: return reduce("ReduceSum", true);
    case OpId::k_mean: return reduce("ReduceMean", false);
    case OpId::k_max: return reduce("ReduceMax", false);
    case OpId::k_min: return reduce("ReduceMin", false);
    case OpId::k_argmax:
    case OpId::k_argmin: {
      const char* onnx_op = n.def->id == OpId::k_argmax ? "ArgMax" : "ArgMin";
      if (a.i(0) == ops::kArgAxisAll) {  // over all elements: the flat index, as the registry gives it
        NodeProto* p = w.node(onnx_op, {w.tmp("Reshape", {in(0), w.ints({-1})})}, a.b(1) ? w.fresh("argflat") : y);
        Writer::attr(p, "axis", int64_t{0});
        Writer::attr(p, "keepdims", int64_t{0});
        if (a.b(1)) w.node("Reshape", {p->output(0), w.ints(std::vector<int64_t>(g.values[n.inputs[0]].dims.size(), 1))}, y);
        return;
      }
      NodeProto* p = w.node(onnx_op, {in(0)}, y);
      Writer::attr(p, "axis", a.i(0));
      Writer::attr(p, "keepdims", (int64_t)a.b(1));
      return;
    }
    case OpId::k_var: {  // sum((x - mean)^2) / (N - correction) over the axes
      const ir::Value& xv = g.values[n.inputs[0]];
      std::vector<int64_t> axes = a.ints(0);
      if (axes.empty())
        for (size_t d = 0; d < xv.dims.size(); ++d) axes.push_back((int64_t)d);
      int64_t count = 1;
      for (int64_t ax : axes) {
        const ir::Dim& d = xv.dims[(size_t)(ax < 0 ? ax + (int64_t)xv.dims.size() : ax)];
        if (d.symbolic()) w.unsupported("var over the symbolic dimension '" + d.symbol + "'");
        count *= d.extent;
      }
      const std::string x = in_as(0, yt);
      NodeProto* m = w.node("ReduceMean", {x}, w.fresh("mean"));
      Writer::attr(m, "axes", axes);
      Writer::attr(m, "keepdims", int64_t{1});
      const std::string d = w.tmp("Sub", {x, m->output(0)});
      NodeProto* s = w.node("ReduceSum", {w.tmp("Mul", {d, d}), w.ints(axes)}, w.fresh("sum"));
      Writer::attr(s, "keepdims", (int64_t)a.b(2));
      w.node("Div", {s->output(0), w.scalar((double)std::max<int64_t>(0, count - a.i(1)), yt)}, y);
      return;
    }
    case OpId::k_matmul: return binary("MatMul");
    case OpId::k_reshape: {
      // ONNX reads a 0 in the shape as "copy the input's extent" unless allowzero is set.
      const bool zero = std::find(a.ints(0).begin(), a.ints(0).end(), 0) != a.ints(0).end();
      NodeProto* p = w.node("Reshape", {in(0), w.ints(a.ints(0))}, y);
      if (zero) Writer::attr(p, "allowzero", int64_t{1});
      return;
    }
    case OpId::k_permute: Writer::attr(w.node("Transpose", {in(0)}, y), "perm", a.ints(0)); return;
    case OpId::k_slice:
      w.node("Slice", {in(0), w.ints({a.i(1)}), w.ints({a.i(2)}), w.ints({a.i(0)}), w.ints({a.i(3)})}, y);
      return;
    case OpId::k_expand: {
      std::vector<int64_t> shape = a.ints(0);
      for (auto& e : shape) e = e < 0 ? 1 : e;  // -1 keeps the input's extent: 1 broadcasts to it
      w.node("Expand", {in(0), w.ints(shape)}, y);
      return;
    }
    case OpId::k_concat: {
      std::vector<std::string> ins;
      for (size_t k = 0; k < n.inputs.size(); ++k) ins.push_back(in_as((int)k, yt));
      Writer::attr(w.node("Concat", ins, y), "axis", a.i(0));
      return;
    }
    case OpId::k_gather: Writer::attr(w.node("GatherElements", {in(0), in(1)}, y), "axis", a.i(0)); return;
    case OpId::k_index_select: Writer::attr(w.node("Gather", {in(0), in(1)}, y), "axis", a.i(0)); return;
    case OpId::k_embedding: Writer::attr(w.node("Gather", {in(1), in(0)}, y), "axis", int64_t{0}); return;
    case OpId::k_scatter_add: {
      NodeProto* p = w.node("ScatterElements", {in_as(0, yt), in(1), in_as(2, yt)}, y);
      Writer::attr(p, "axis", a.i(0));
      Writer::attr_s(p, "reduction", "add");
      return;
    }
    case OpId::k_conv2d: {
      const ir::Value& wv = g.values[n.inputs[1]];
      const auto pad = pair2(a.ints(1), {0, 0});
      NodeProto* p = w.node("Conv", {in_as(0, yt), in_as(1, yt)}, y);
      Writer::attr(p, "kernel_shape", std::vector<int64_t>{wv.dims[2].extent, wv.dims[3].extent});
      Writer::attr(p, "strides", pair2(a.ints(0), {1, 1}));
      Writer::attr(p, "pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]});
      Writer::attr(p, "dilations", pair2(a.ints(2), {1, 1}));
      Writer::attr(p, "group", a.i(3));
      return;
    }
    case OpId::k_max_pool2d:
    case OpId::k_avg_pool2d: {
      const auto kernel = pair2(a.ints(0), {});
      const auto pad = pair2(a.ints(2), {0, 0});
      const bool avg = n.def->id == OpId::k_avg_pool2d;
      NodeProto* p = w.node(avg ? "AveragePool" : "MaxPool", {in_as(0, yt)}, y);
      Writer::attr(p, "kernel_shape", kernel);
      Writer::attr(p, "strides", pair2(a.ints(1), kernel));
      Writer::attr(p, "pads", std::vector<int64_t>{pad[0], pad[1], pad[0], pad[1]});
      Writer::attr(p, "ceil_mode", (int64_t)a.b(3));
      if (avg) Writer::attr(p, "count_include_pad", int64_t{0});  // Spore divides by the cells inside
      return;
    }
    case OpId::k_adaptive_avg_pool2d: {
      const ir::Value& xv = g.values[n.inputs[0]];
      const auto size = pair2(a.ints(0), {});
      if (size[0] == 1 && size[1] == 1) {
        w.node("GlobalAveragePool", {in_as(0, yt)}, y);
        return;
      }
      const ir::Dim &h = xv.dims[2], &wd = xv.dims[3];
      if (h.symbolic() || wd.symbolic() || h.extent % size[0] || wd.extent % size[1])
        w.unsupported("adaptive_avg_pool2d to " + std::to_string(size[0]) + "x" + std::to_string(size[1]) +
                      " from an extent it does not divide (only even windows map onto AveragePool)");
      NodeProto* p = w.node("AveragePool", {in_as(0, yt)}, y);
      const std::vector<int64_t> k = {h.extent / size[0], wd.extent / size[1]};
      Writer::attr(p, "kernel_shape", k);
      Writer::attr(p, "strides", k);
      return;
    }
    case OpId::k_softmax: Writer::attr(w.node("Softmax", {in_as(0, yt)}, y), "axis", a.i(0)); return;
    case OpId::k_log_softmax: Writer::attr(w.node("LogSoftmax", {in_as(0, yt)}, y), "axis", a.i(0)); return;
    case OpId::k_fill: {
      TensorProto* v = nullptr;
      NodeProto* p = w.node("ConstantOfShape", {w.ints(a.ints(0))}, y);
      AttributeProto* at = p->add_attribute();
      at->set_name("value");
      at->set_type(AttributeProto::TENSOR);
      v = at->mutable_t();
      const Tensor one = Tensor::from_vector(std::vector<double>{a.f(1)}, Shape{1}).to(a.dtype(2));
      v->set_data_type(onnx_type(a.dtype(2)));
      v->add_dims(1);
      v->set_raw_data(std::string(static_cast<const char*>(one.data_ptr()), one.nbytes()));
      return;
    }
    case OpId::k_arange:
      w.node("Range", {w.scalar(a.f(0), a.dtype(3)), w.scalar(a.f(1), a.dtype(3)), w.scalar(a.f(2), a.dtype(3))}, y);
      return;
    case OpId::k_rms_norm: {  // x / sqrt(mean(x^2, -1) + eps) * w
      const std::string x = in_as(0, yt);
      NodeProto* m = w.node("ReduceMean", {w.tmp("Mul", {x, x})}, w.fresh("meansq"));
      Writer::attr(m, "axes", std::vector<int64_t>{-1});
      Writer::attr(m, "keepdims", int64_t{1});
      const std::string inv = w.tmp("Reciprocal", {w.tmp("Sqrt", {w.tmp("Add", {m->output(0), w.scalar(a.f(0), yt)})})});
      w.node("Mul", {w.tmp("Mul", {x, inv}), in_as(1, yt)}, y);
      return;
    }
    default:
      w.unsupported(std::string("the op ") + op + " has no ONNX (op set 17) equivalent in this exporter");
  }
}

}  // namespace

std::string ir_to_onnx_bytes(const ir::Model& m) {
  ::onnx::ModelProto model;
  model.set_ir_version(kOnnxIrVersion);
  model.set_producer_name(m.producer_name);
  model.set_producer_version(m.producer_version);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  for (const auto& [k, v] : m.metadata) {
    auto* p = model.add_metadata_props();
    p->set_key(k);
    p->set_value(v);
  }
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name("spore");
  const ir::Graph& g = m.graph;
  Writer w{g, graph, {}, {}, 0, {}};
  // Names: the IR's where given and unique, else v<id>.
  for (size_t i = 0; i < g.values.size(); ++i) {
    std::string n = g.values[i].name;
    if (n.empty() || w.used.count(n)) n = std::string("v").append(std::to_string(i));
    while (w.used.count(n)) n += "_";
    w.used.insert(n);
    w.names.push_back(n);
  }
  for (uint32_t id : g.inputs) {
    auto* vi = graph->add_input();
    vi->set_name(w.names[id]);
    fill_type(vi->mutable_type(), g.values[id]);
  }
  for (size_t i = 0; i < g.values.size(); ++i)
    if (g.values[i].data.defined()) w.initializer(w.names[i], g.values[i].data);
  for (size_t k = 0; k < g.nodes.size(); ++k) {
    const ir::Node& n = g.nodes[k];
    w.where = "node " + std::to_string(k) + " (" + n.def->name + ")";
    if (!n.subgraphs.empty()) w.unsupported("subgraphs (cond / while_loop) are not exported to ONNX");
    if (n.def->facts.collective)
      w.unsupported("a collective across processes (NOTE [Collective ops]) has no meaning in ONNX, which runs one "
                    "process: export the network without its DistributedDataParallel wrapper or dist:: calls");
    if (n.outputs.size() != 1) w.unsupported("an op with " + std::to_string(n.outputs.size()) + " outputs");
    write_node(w, n);
  }
  for (uint32_t id : g.outputs) {
    std::string name = w.names[id];
    if (g.values[id].kind != ir::ValueKind::kNode) {  // an output that is an input or a weight
      name = w.fresh(name + "_out");
      w.node("Identity", {w.names[id]}, name);
    }
    auto* vi = graph->add_output();
    vi->set_name(name);
    fill_type(vi->mutable_type(), g.values[id]);
  }
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    fail(ErrorCode::kInternal, std::string("the ONNX checker rejects the exported model (a bug in the exporter): ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    fail(ErrorCode::kUnsupported, "the model does not serialise (over protobuf's 2 GiB limit?)");
  return bytes;
}

void export_onnx(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                 const ExportOptions& options) {
  ExportOptions o = options;
  o.optimize = false;  // fused_elementwise has no ONNX op; ONNX runtimes fuse on their own
  const std::string bytes = ir_to_onnx_bytes(trace_to_ir(fn, example_inputs, o));
  atomic_write_file(path, std::span<const uint8_t>((const uint8_t*)bytes.data(), bytes.size()));
}

void export_onnx(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                 const ExportOptions& options) {
  ExportOptions o = options;
  o.optimize = false;
  const std::string bytes = ir_to_onnx_bytes(trace_cell_to_ir(cell, example_inputs, o));
  atomic_write_file(path, std::span<const uint8_t>((const uint8_t*)bytes.data(), bytes.size()));
}

}  // namespace spore
