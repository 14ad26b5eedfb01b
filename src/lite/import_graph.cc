// The importers' graph builder (import_graph.h).
#include "lite/import_graph.h"

#include "spore/control_ops.h"
#include "spore/error.h"

namespace spore::lite {

uint32_t GraphBuilder::push(ir::Value v, Tensor p) {
  g.values.push_back(std::move(v));
  probe.push_back(std::move(p));
  return (uint32_t)g.values.size() - 1;
}

std::vector<ir::Dim> GraphBuilder::dims_of(const Shape& s) {
  std::vector<ir::Dim> d;
  for (int64_t e : s) d.push_back({e, {}});
  return d;
}

Tensor GraphBuilder::placeholder(const Shape& s, DType dtype) {
  Tensor one = Tensor::empty(Shape{}, dtype, Device::cpu());
  std::vector<int64_t> shape(s.begin(), s.end());
  return dispatch1(OpId::k_expand, {one}, Attrs::of(shape));
}

uint32_t GraphBuilder::constant(Tensor t, ir::ValueKind kind, std::string name) {
  ir::Value v{std::move(name), kind, t.dtype(), dims_of(t.shape()), t};
  return push(std::move(v), t);
}

std::vector<Tensor> GraphBuilder::probes(const std::vector<uint32_t>& ins) const {
  std::vector<Tensor> ts;
  for (uint32_t id : ins) ts.push_back(probe[id]);
  return ts;
}

Inference GraphBuilder::infer(const std::string& where, const OpDef& def, const std::vector<Tensor>& ts, const Attrs& attrs) {
  Inference inf;
  try {
    def.infer(InferArgs{def, ts, attrs}, inf);
  } catch (const Error& e) {
    throw Error(e.code(), where + " (mapped onto " + def.name + "): " + e.what());
  }
  return inf;
}

std::vector<uint32_t> GraphBuilder::add_node(const std::string& where, const OpDef& def, const std::vector<uint32_t>& ins,
                                             const Attrs& attrs, const Inference& inf, int n_outputs) {
  for (int o = 0; o < n_outputs; ++o)
    if (inf.outputs[o].shape.numel() > kMaxValueElements)
      throw Error(ErrorCode::kUnsupported, where + " (mapped onto " + def.name + ") makes a value of shape " +
                                               inf.outputs[o].shape.str() + ", over Lite's 2^31 elements per value");
  ir::Node n{&def, attrs, ins, {}, {}};
  for (int o = 0; o < n_outputs; ++o) {
    const TensorMeta& t = inf.outputs[o];
    n.outputs.push_back(push({"", ir::ValueKind::kNode, t.dtype, dims_of(t.shape), {}}, placeholder(t.shape, t.dtype)));
  }
  g.nodes.push_back(n);
  return n.outputs;
}

std::vector<uint32_t> GraphBuilder::add_control_node(const std::string& where, const OpDef& def, const std::vector<uint32_t>& ins,
                                                     const Attrs& attrs) {
  std::vector<TensorMeta> results;
  try {
    results = control_results(def, probes(ins), attrs);
  } catch (const Error& e) {
    throw Error(e.code(), where + " (mapped onto " + def.name + "): " + e.what());
  }
  ir::Node n{&def, attrs, ins, {}, {}};
  for (const TensorMeta& t : results) {
    if (t.shape.numel() > kMaxValueElements)
      throw Error(ErrorCode::kUnsupported, where + " (mapped onto " + def.name + ") makes a value of shape " + t.shape.str() +
                                               ", over Lite's 2^31 elements per value");
    n.outputs.push_back(push({"", ir::ValueKind::kNode, t.dtype, dims_of(t.shape), {}}, placeholder(t.shape, t.dtype)));
  }
  g.nodes.push_back(n);
  return n.outputs;
}

}  // namespace spore::lite
