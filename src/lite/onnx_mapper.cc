// The ONNX importer's mapping state, out of line (onnx_mapper.h): the attribute readers and the
// known-value lookups every onnx_map_*.cc file calls.
#include "lite/onnx_mapper.h"

namespace spore::onnx::detail {

int64_t NodeCtx::i(const std::string& name, int64_t dflt) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return dflt;
  if (a->type() != AttributeProto::INT) bad("attribute '" + name + "' is not an int");
  return a->i();
}
double NodeCtx::f(const std::string& name, double dflt) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return dflt;
  if (a->type() != AttributeProto::FLOAT) bad("attribute '" + name + "' is not a float");
  return a->f();
}
std::string NodeCtx::s(const std::string& name, const std::string& dflt) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return dflt;
  if (a->type() != AttributeProto::STRING) bad("attribute '" + name + "' is not a string");
  return a->s();
}
std::vector<int64_t> NodeCtx::ints(const std::string& name, std::vector<int64_t> dflt) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return dflt;
  if (a->type() != AttributeProto::INTS) bad("attribute '" + name + "' is not a list of ints");
  return {a->ints().begin(), a->ints().end()};
}
std::vector<double> NodeCtx::floats(const std::string& name, std::vector<double> dflt) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return dflt;
  if (a->type() != AttributeProto::FLOATS) bad("attribute '" + name + "' is not a list of floats");
  return {a->floats().begin(), a->floats().end()};
}
std::vector<std::string> NodeCtx::strings(const std::string& name) const {
  const AttributeProto* a = find_attr(node, name);
  if (!a) return {};
  if (a->type() != AttributeProto::STRINGS) bad("attribute '" + name + "' is not a list of strings");
  return {a->strings().begin(), a->strings().end()};
}

const Tensor* Mapper::hinted(uint32_t id) const {
  if (is_constant(id)) return &g.values[id].data;
  if (auto k = known.find(id); k != known.end()) return &k->second.first;
  if (auto h = hints.find(id); h != hints.end()) return &h->second;
  return nullptr;
}

const Tensor& Mapper::data(const NodeCtx& c, uint32_t id, const char* what) {
  const ir::Value& v = g.values[id];
  if (unknowable.count(id))
    c.unsupported(std::string("a ") + what + " computed at run time inside a subgraph (a Loop body's iteration number, "
                  "condition or loop-carried value, or an outer value computed from large values: Lite maps such a subgraph "
                  "once, for every run)");
  if (v.kind == ir::ValueKind::kInput) {  // known only at predict (InputValueNeeded)
    if (!v.data.defined())
      throw InputValueNeeded(v.name, c.where + ": the " + what + " comes from the graph input '" + v.name +
                                         "'; it is mapped when predict gives its value");
    used.insert(v.name);
    return v.data;
  }
  if (auto k = known.find(id); k != known.end()) {
    used.insert(k->second.second.begin(), k->second.second.end());
    return k->second.first;
  }
  if (derivable.count(id))
    throw InputValueNeeded("", c.where + ": the " + what + " is computed from graph inputs; it is mapped when predict gives their values");
  if (!is_constant(id))
    c.unsupported(std::string("a computed ") + what + " (Spore needs it to be an initializer, a Constant or a small value computed from the inputs)");
  return v.data;
}
std::vector<int64_t> Mapper::int_data(const NodeCtx& c, uint32_t id, const char* what) {
  const Tensor& t = data(c, id, what);
  if (t.dtype() == DType::kInt64) return t.to_vector<int64_t>();
  if (t.dtype() == DType::kInt32) {
    std::vector<int64_t> out;
    for (int32_t v : t.to_vector<int32_t>()) out.push_back(v);
    return out;
  }
  c.bad(std::string(what) + " must be int64, not " + dtype_name(t.dtype()));
}
std::vector<double> Mapper::float_data(const NodeCtx& c, uint32_t id, const char* what) {
  return data(c, id, what).contiguous().to(DType::kFloat64).to_vector<double>();
}

}  // namespace spore::onnx::detail
