// Eager dispatch: the path every op takes (NOTE [Op registry], NOTE [Precision modes]).
#include <algorithm>
#include <optional>
#include <vector>

#include "spore/backend.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/op_registry.h"

namespace spore {

namespace {
thread_local DispatchObserver* t_observer = nullptr;

constexpr int kInferenceSlots = 8;
thread_local Inference t_inference[kInferenceSlots];
thread_local int t_depth = 0;

class InferenceSlot {
 public:
  InferenceSlot() : level_(t_depth++) {}
  ~InferenceSlot() { --t_depth; }
  InferenceSlot(const InferenceSlot&) = delete;
  InferenceSlot& operator=(const InferenceSlot&) = delete;
  Inference& get() {
    Inference& inf = level_ < kInferenceSlots ? t_inference[level_] : own_.emplace();
    inf.num_outputs = 1;
    inf.compute = DType::kFloat32;
    inf.device = Device{};
    return inf;
  }

 private:
  int level_;
  std::optional<Inference> own_;  // deeper than the slots: an ordinary local
};

std::string dtype_list(const std::vector<DType>& ts) {
  std::string s;
  for (DType t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s.empty() ? "none" : s;
}

void check_attrs(const OpDef& def, const Attrs& attrs) {
  if (attrs.size() != (int)def.attrs.size())
    op_error(def, ErrorCode::kValue, "expects " + std::to_string(def.attrs.size()) +
                                         " attributes, got " + std::to_string(attrs.size()));
  for (int i = 0; i < attrs.size(); ++i) {
    // AttrKind's order matches AttrValue's alternatives.
    if ((int)attrs[i].index() != (int)def.attrs[i].kind)
      op_error(def, ErrorCode::kValue, std::string("attribute '") + def.attrs[i].name +
                                           "' must be of kind " + attr_kind_name(def.attrs[i].kind));
  }
}

// NOTE [Precision modes]: the dtype an op runs in when its own has no kernel on a backend:
// lossless widenings first, then narrowings by precision (float16 keeps more mantissa than
// bfloat16). Integers widen to int64, then fall back to float32 only if that is exact enough.
DType fallback_dtype(const OpDef& def, int backend, DType want) {
  static constexpr DType kFloatOrder[][4] = {
      /*f16*/ {DType::kFloat32, DType::kFloat64, DType::kBFloat16, DType::kFloat16},
      /*bf16*/ {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16},
      /*f32*/ {DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kFloat32},
      /*f64*/ {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64},
  };
  auto has = [&](DType t) { return def.kernel(backend, t) != nullptr; };
  if (is_floating(want)) {
    int row = want == DType::kFloat16 ? 0 : want == DType::kBFloat16 ? 1 : want == DType::kFloat32 ? 2 : 3;
    for (DType t : kFloatOrder[row])
      if (t != want && has(t)) return t;
  } else {
    for (DType t : {DType::kInt32, DType::kInt64, DType::kFloat64, DType::kFloat32})
      if (dtype_size(t) >= dtype_size(want) && t != want && has(t)) return t;
  }
  return want;  // nothing suitable
}

[[noreturn]] void no_kernel(const OpDef& def, std::span<const Tensor> inputs, Device device,
                            DType dtype, bool mixed_failed) {
  std::string msg = "no " + std::string(dtype_name(dtype)) + " kernel on device '" + device.str() +
                    "' for inputs " + describe_inputs(inputs) + " (precision mode " +
                    precision_mode_name(context().precision) + "); '" + device.str() +
                    "' runs " + def.name + " in: " + dtype_list(def.supported_dtypes(device.backend)) + ". ";
  msg += mixed_failed ? "No dtype it supports can stand in for " + std::string(dtype_name(dtype)) + "."
                      : "Cast the inputs to a supported dtype, or set the precision mode to "
                        "allow_mixed to let Spore cast for this op.";
  op_error(def, ErrorCode::kDType, msg);
}
}  // namespace

void op_error(const OpDef& def, ErrorCode code, const std::string& what) {
  throw Error(code, std::string(def.name) + ": " + what);
}

std::string describe_inputs(std::span<const Tensor> inputs) {
  std::string s;
  for (const Tensor& t : inputs) {
    if (!s.empty()) s += ", ";
    s += t.defined() ? std::string(dtype_name(t.dtype())) + t.shape().str() : "undefined";
  }
  return s.empty() ? "(none)" : s;
}

DispatchObserver* set_dispatch_observer(DispatchObserver* observer) {
  return std::exchange(t_observer, observer);
}

TensorList dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  // The table never moves once built: keep it instead of passing op_def's call_once each time.
  static const std::span<const OpDef> table = all_ops();
  const OpDef& def = table[(size_t)id];
  const int n_in = (int)inputs.size();
  if (def.num_inputs >= 0 ? n_in != def.num_inputs : n_in == 0)
    op_error(def, ErrorCode::kValue, "expects " +
                                         (def.num_inputs >= 0 ? std::to_string(def.num_inputs)
                                                              : std::string("at least 1")) +
                                         " inputs, got " + std::to_string(n_in));
  for (int i = 0; i < n_in; ++i)
    if (!inputs[i].defined())
      op_error(def, ErrorCode::kValue, "input " + std::to_string(i) + " is an undefined tensor");
  if (attrs.size() || !def.attrs.empty()) check_attrs(def, attrs);

  // NOTE [Tensor allocation]: an Inference is ~350 bytes that the constructor zeroes, a fifth of
  // a small op's dispatch. Each nesting level of dispatch (kernels and casts dispatch too) reuses
  // one per thread instead; infer functions write every output they declare, so what an earlier
  // op left in the others is never read.
  InferenceSlot slot;
  Inference& inf = slot.get();
  if (n_in) {
    inf.device = inputs[0].device();
    for (int i = 1; i < n_in; ++i)
      if (inputs[i].device() != inf.device)
        op_error(def, ErrorCode::kDevice, "inputs live on different devices (" + inf.device.str() +
                                              " and " + inputs[i].device().str() +
                                              "); move them with .to(device) first");
  } else {
    inf.device = context().device;
  }
  def.infer(InferArgs{def, inputs, attrs}, inf);

  TensorList outs;
  outs.resize(inf.num_outputs);
  if (def.view) {
    def.view(inputs, attrs, outs.span());
    if (t_observer) t_observer->on_op(def, inputs, attrs, outs.span());
    return outs;
  }

  const int backend = inf.device.backend;
  DType compute = inf.compute;
  KernelFn fn = def.kernel(backend, compute);
  const bool fallback = fn == nullptr;
  if (fallback) {
    if (context().precision == PrecisionMode::kKeepType) no_kernel(def, inputs, inf.device, compute, false);
    DType alt = fallback_dtype(def, backend, compute);
    fn = def.kernel(backend, alt);
    if (!fn) no_kernel(def, inputs, inf.device, compute, true);
    compute = alt;
  }

  // Bring promoted inputs to the compute dtype; no copy of the input list when none needs it.
  std::span<const Tensor> kin = inputs;
  std::vector<Tensor> cast_inputs;
  for (int i = 0; i < n_in; ++i) {
    // Bit 31 of promote_mask stands for input 31 and every later one (variadic ops).
    if (((def.promote_mask >> (i < 32 ? i : 31)) & 1u) && inputs[i].dtype() != compute) {
      if (cast_inputs.empty()) cast_inputs.assign(inputs.begin(), inputs.end());
      cast_inputs[i] = inputs[i].to(compute);
    }
  }
  if (!cast_inputs.empty()) kin = cast_inputs;

  for (int o = 0; o < inf.num_outputs; ++o) {
    DType t = inf.outputs[o].dtype;
    if (fallback && t == inf.compute) t = compute;  // produced in the stand-in dtype
    outs[o] = Tensor::empty(inf.outputs[o].shape, t, inf.device);
  }
  fn(KernelCall{def, kin, outs.span(), attrs});
  if (fallback) {
    for (int o = 0; o < inf.num_outputs; ++o)
      if (outs[o].dtype() != inf.outputs[o].dtype) outs[o] = outs[o].to(inf.outputs[o].dtype);
  }
  if (t_observer) t_observer->on_op(def, inputs, attrs, outs.span());
  return outs;
}

Tensor dispatch1(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  TensorList outs = dispatch(id, inputs, attrs);
  return std::move(outs[0]);
}

}  // namespace spore
