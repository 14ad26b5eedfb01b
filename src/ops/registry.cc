// The op table (NOTE [Op registry] in include/spore/op_registry.h).
#include <algorithm>
#include <cstring>
#include <mutex>

#include "op_families.h"
#include "spore/backend.h"
#include "spore/error.h"

namespace spore {

namespace {
constexpr const char* kOpNames[] = {
#define SPORE_OP_NAME(name) #name,
    SPORE_OP_LIST(SPORE_OP_NAME)
#undef SPORE_OP_NAME
};

ops::OpTable* build_table() {
  auto* t = new ops::OpTable();
  ops::define_elementwise_ops(*t);
  ops::define_reduce_ops(*t);
  ops::define_matmul_ops(*t);
  ops::define_shape_ops(*t);
  ops::define_index_ops(*t);
  ops::define_norm_ops(*t);
  ops::define_creation_ops(*t);
  ops::define_conv_ops(*t);
  ops::define_optim_ops(*t);
  ops::define_fused_ops(*t);
  ops::define_llm_ops(*t);
  ops::define_quant_ops(*t);
  ops::define_int8_ops(*t);
  ops::define_control_ops(*t);
  ops::define_collective_ops(*t);
  // An op listed but not defined keeps its name and fails when dispatched; the registry test
  // asserts that none is left undefined.
  for (int i = 0; i < kNumOps; ++i) {
    OpDef& d = (*t)[i];
    if (d.infer) continue;
    d.id = (OpId)i;
    d.name = kOpNames[i];
    d.num_inputs = -1;
    d.infer = [](const InferArgs& a, Inference&) {
      op_error(a.def, ErrorCode::kUnsupported, "this op is listed but has no definition yet");
    };
  }
  return t;
}

ops::OpTable& table() {
  // Built on first use; kernels are registered right after, by the same call_once.
  static ops::OpTable* t = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    t = build_table();
    run_backend_kernel_hooks();  // NOTE [Backend registration]
    ops::install_tensor_hooks();
  });
  return *t;
}

// Kernels are registered while table() is being built, before it returns: they go through this
// pointer, which build has already set.
ops::OpTable* g_building = nullptr;
}  // namespace

namespace ops {
OpDef& define(OpTable& table, OpId id, int num_inputs, std::vector<AttrSpec> attrs) {
  g_building = &table;
  OpDef& d = table[(int)id];
  d.id = id;
  d.name = kOpNames[(int)id];
  d.num_inputs = num_inputs;
  d.attrs = std::move(attrs);
  return d;
}
}  // namespace ops

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kInt: return "int";
    case AttrKind::kFloat: return "float";
    case AttrKind::kBool: return "bool";
    case AttrKind::kDType: return "dtype";
    case AttrKind::kInts: return "ints";
    case AttrKind::kString: return "string";
  }
  return "?";
}

Attrs::Attrs(std::initializer_list<AttrValue> values) {
  if (values.size() > (size_t)kMax)
    throw Error(ErrorCode::kInternal, "an op takes at most " + std::to_string(kMax) + " attributes");
  for (const AttrValue& v : values) v_[n_++] = v;
}

Attrs Attrs::from(std::span<const AttrValue> values) {
  if (values.size() > (size_t)kMax)
    throw Error(ErrorCode::kValue, "an op takes at most " + std::to_string(kMax) + " attributes, got " +
                                       std::to_string(values.size()));
  Attrs a;
  for (const AttrValue& v : values) a.v_[a.n_++] = v;
  return a;
}

std::vector<DType> OpDef::supported_dtypes(int backend) const {
  std::vector<DType> out;
  for (DType t : kAllDTypes)
    if (kernels[backend][(int)t]) out.push_back(t);
  return out;
}

void register_kernel_selector(OpId id, int backend, KernelSelector fn) {
  if (backend < 0 || backend >= kMaxBackends)
    throw Error(ErrorCode::kInternal, "register_kernel_selector: bad backend id " + std::to_string(backend));
  ops::OpTable& t = g_building ? *g_building : table();
  t[(int)id].selectors[backend] = fn;
}

const OpDef& op_def(OpId id) { return table()[(int)id]; }

const OpDef* find_op(std::string_view name) {
  for (const OpDef& d : table())
    if (name == d.name) return &d;
  return nullptr;
}

std::span<const OpDef> all_ops() { return {table().data(), table().size()}; }

void register_kernel(OpId id, int backend, DType dtype, KernelFn fn) {
  if (backend < 0 || backend >= kMaxBackends)
    throw Error(ErrorCode::kInternal, "register_kernel: bad backend id " + std::to_string(backend));
  ops::OpTable& t = g_building ? *g_building : table();
  t[(int)id].kernels[backend][(int)dtype] = fn;
}

}  // namespace spore
