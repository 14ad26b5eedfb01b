// Dispatch as plan and run, the path every op takes (NOTE [Dispatch plans], NOTE [Op registry],
// NOTE [Precision modes]), and the per-thread observer stack (NOTE [Dispatch observers]).
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "spore/dispatch_plan.h"
#include "spore/backend.h"
#include "spore/context.h"
#include "spore/error.h"

namespace spore {

namespace {
// NOTE [Dispatch observers]: the stack of this thread's observers. `t_num_observers` is the only
// thing the fast path reads; `t_grad_floor` is how many of the bottom entries NoGradGuard hides
// from gradient recorders.
thread_local int t_num_observers = 0;
thread_local int t_grad_floor = 0;
thread_local DispatchObserver* t_observers[kMaxDispatchObservers];

void notify_observers(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                      std::span<const Tensor> outputs) {
  // Index-based: an observer may push or pop others while it runs (a tape's backward pass).
  for (int i = 0; i < t_num_observers; ++i) {
    DispatchObserver* o = t_observers[i];
    if (i < t_grad_floor && o->records_gradients()) continue;
    o->on_op(def, inputs, attrs, outputs);
  }
}

constexpr int kPlanSlots = 8;
thread_local DispatchPlan t_plans[kPlanSlots];
thread_local int t_depth = 0;

// NOTE [Tensor allocation]: a plan holds an Inference, ~350 bytes that a constructor zeroes, a
// fifth of a small op's dispatch. Each nesting level of dispatch (kernels and casts dispatch
// too) reuses one per thread instead; infer functions write every output they declare, so what
// an earlier op left in the others is never read.
class PlanSlot {
 public:
  PlanSlot() : level_(t_depth++) {}
  ~PlanSlot() { --t_depth; }
  PlanSlot(const PlanSlot&) = delete;
  PlanSlot& operator=(const PlanSlot&) = delete;
  DispatchPlan& get() { return level_ < kPlanSlots ? t_plans[level_] : own_.emplace(); }

 private:
  int level_;
  std::optional<DispatchPlan> own_;  // deeper than the slots: an ordinary local
};

std::string dtype_list(const std::vector<DType>& ts) {
  std::string s;
  for (DType t : ts) s += (s.empty() ? "" : ", ") + std::string(dtype_name(t));
  return s.empty() ? "none" : s;
}

void check_attrs(const OpDef& def, const Attrs& attrs) {
  // Trailing optional attributes (added to an op later, AttrSpec::optional) may be left out, as
  // an IR file written before them leaves them out; the kernel then sees fewer.
  int required = (int)def.attrs.size();
  while (required > 0 && def.attrs[(size_t)required - 1].optional) --required;
  if (attrs.size() < required || attrs.size() > (int)def.attrs.size())
    op_error(def, ErrorCode::kValue, "expects " + std::to_string(def.attrs.size()) + " attributes" +
                                         (required < (int)def.attrs.size() ? " (the last " + std::to_string(def.attrs.size() - (size_t)required) + " optional)" : std::string()) +
                                         ", got " + std::to_string(attrs.size()));
  for (int i = 0; i < attrs.size(); ++i) {
    // AttrKind's order matches AttrValue's alternatives.
    if ((int)attrs[i].index() != (int)def.attrs[i].kind)
      op_error(def, ErrorCode::kValue, std::string("attribute '") + def.attrs[i].name +
                                           "' must be of kind " + attr_kind_name(def.attrs[i].kind));
  }
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

// NOTE [Precision modes]: float16 keeps more mantissa than bfloat16, so each stands in for the
// other after the lossless widenings. Integers widen to int64, then fall back to float32 only if
// that is exact enough.
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

void push_dispatch_observer(DispatchObserver* observer) {
  if (!observer) throw Error(ErrorCode::kValue, "push_dispatch_observer: the observer is null");
  if (t_num_observers == kMaxDispatchObservers)
    throw Error(ErrorCode::kValue, "push_dispatch_observer: this thread already has " +
                                       std::to_string(kMaxDispatchObservers) +
                                       " observers; pop one (or nest fewer tapes) first");
  t_observers[t_num_observers++] = observer;
}

void pop_dispatch_observer(DispatchObserver* observer) noexcept {
  for (int i = t_num_observers - 1; i >= 0; --i) {
    if (t_observers[i] != observer) continue;
    for (int j = i; j + 1 < t_num_observers; ++j) t_observers[j] = t_observers[j + 1];
    --t_num_observers;
    if (t_grad_floor > i) --t_grad_floor;  // the entries the pause covered moved down by one
    return;
  }
}

int num_dispatch_observers() { return t_num_observers; }

void notify_dispatch_observers(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                               std::span<const Tensor> outputs) {
  if (t_num_observers) notify_observers(def, inputs, attrs, outputs);
}

int dispatch_depth() { return t_depth; }

int pause_gradient_recording() { return std::exchange(t_grad_floor, t_num_observers); }
void resume_gradient_recording(int token) noexcept { t_grad_floor = token; }

namespace {
// Plan and run are written once and inlined into both eager dispatch and their public entry
// points: a call between them costs a small op's dispatch a few percent.
#define SPORE_DISPATCH_INLINE inline __attribute__((always_inline))

SPORE_DISPATCH_INLINE void plan_into(OpId id, std::span<const Tensor> inputs, const Attrs& attrs,
                                     DispatchPlan& plan) {
  // The table never moves once built: keep it instead of passing op_def's call_once each time.
  static const std::span<const OpDef> table = all_ops();
  if ((size_t)id >= table.size())
    throw Error(ErrorCode::kValue, "dispatch: op id " + std::to_string((int)id) + " is not in the registry");
  const OpDef& def = table[(size_t)id];
  plan.def = &def;
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

  Inference& inf = plan.inference;
  inf.num_outputs = 1;
  inf.compute = DType::kFloat32;
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

  plan.kernel = nullptr;
  plan.compute = inf.compute;
  plan.fallback = false;
  plan.selected = false;
  plan.cast_mask = 0;
  if (def.view) return;

  const int backend = inf.device.backend;
  // NOTE [Kernel selection]: a selector sees the whole call first; the table is the fast path.
  if (KernelSelector select = def.selectors[backend]) {
    if ((plan.kernel = select(KernelQuery{def, inputs, attrs, inf}))) {
      plan.selected = true;
      return;
    }
  }
  KernelFn fn = def.kernel(backend, inf.compute);
  if (!fn) {
    // NOTE [Control flow]: a node with subgraphs is run by spore::while_loop or the graph
    // executor, never as a kernel call.
    if (def.num_subgraphs)
      op_error(def, ErrorCode::kUnsupported, "carries subgraphs and has no kernel; call spore::while_loop "
                                             "(include/spore/control_flow.h), which the graph executor compiles");
    if (context().precision == PrecisionMode::kKeepType) no_kernel(def, inputs, inf.device, inf.compute, false);
    DType alt = fallback_dtype(def, backend, inf.compute);
    fn = def.kernel(backend, alt);
    if (!fn) no_kernel(def, inputs, inf.device, inf.compute, true);
    plan.compute = alt;
    plan.fallback = true;
  }
  plan.kernel = fn;
  // Promoted inputs not already in the compute dtype are cast to it.
  for (int i = 0; i < n_in; ++i)
    if (((def.promote_mask >> (i < 32 ? i : 31)) & 1u) && inputs[i].dtype() != plan.compute)
      plan.cast_mask |= 1u << (i < 32 ? i : 31);
}

void check_writable(const OpDef& def, std::span<const Tensor> inputs) {
  for (int i = 0; i < (int)inputs.size(); ++i)
    if (def.writes(i)) inputs[i].storage()->require_writable(def.name);
}

// The run step, shared by eager dispatch and PlannedOp: `inputs` have the signature `plan` was
// made for.
// `preset` (PlannedOp::run_into): outputs a graph executor's memory plan allocated, written in
// place of fresh ones where defined (never under a precision fallback, whose kernel writes another dtype).
SPORE_DISPATCH_INLINE TensorList run_plan(const DispatchPlan& plan, std::span<const Tensor> inputs, const Attrs& attrs,
                                          const Tensor* preset = nullptr) {
  const OpDef& def = *plan.def;
  const Inference& inf = plan.inference;
  TensorList outs;
  outs.resize(inf.num_outputs);
  if (!plan.kernel) {
    def.view(inputs, attrs, outs.span());
    if (t_num_observers) notify_observers(def, inputs, attrs, outs.span());
    return outs;
  }
  // NOTE [Declared effects], NOTE [External storage]: an op's declared written inputs must be
  // writable memory (a mapped weight file is not); refused here, before any kernel of any backend.
  if (def.writes_mask) check_writable(def, inputs);
  // Inputs to cast are copied into a list of their own; no copy of the list when none is.
  std::span<const Tensor> kin = inputs;
  std::vector<Tensor> cast_inputs;
  if (plan.cast_mask) {
    cast_inputs.assign(inputs.begin(), inputs.end());
    for (int i = 0; i < (int)inputs.size(); ++i)
      if (plan.casts_input(i) && inputs[i].dtype() != plan.compute) cast_inputs[i] = inputs[i].to(plan.compute);
    kin = cast_inputs;
  }
  for (int o = 0; o < inf.num_outputs; ++o) {
    if (preset && preset[o].defined() && !plan.fallback) outs[o] = preset[o];
    else outs[o] = Tensor::empty(inf.outputs[o].shape, plan.kernel_output_dtype(o), inf.device);
  }
  plan.kernel(KernelCall{def, kin, outs.span(), attrs});
  if (plan.fallback) {
    for (int o = 0; o < inf.num_outputs; ++o)
      if (outs[o].dtype() != inf.outputs[o].dtype) outs[o] = outs[o].to(inf.outputs[o].dtype);
  }
  if (t_num_observers) notify_observers(def, inputs, attrs, outs.span());
  return outs;
}

#undef SPORE_DISPATCH_INLINE
}  // namespace

void plan_dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs, DispatchPlan& plan) {
  plan_into(id, inputs, attrs, plan);
}

TensorList dispatch(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  PlanSlot slot;
  DispatchPlan& plan = slot.get();
  plan_into(id, inputs, attrs, plan);
  return run_plan(plan, inputs, attrs);
}

Tensor dispatch1(OpId id, std::span<const Tensor> inputs, const Attrs& attrs) {
  TensorList outs = dispatch(id, inputs, attrs);
  return std::move(outs[0]);
}

PlannedOp::PlannedOp(OpId id, std::span<const Tensor> inputs, Attrs attrs) : attrs_(std::move(attrs)) {
  plan_dispatch(id, inputs, attrs_, plan_);
  signature_.reserve(inputs.size());
  for (const Tensor& t : inputs) signature_.push_back({t.shape(), t.dtype()});
}

TensorList PlannedOp::run(std::span<const Tensor> inputs) const {
  const OpDef& def = *plan_.def;
  if (inputs.size() != signature_.size())
    op_error(def, ErrorCode::kValue, "planned for " + std::to_string(signature_.size()) +
                                         " inputs, run with " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    const TensorMeta& want = signature_[i];
    if (!t.defined() || t.dtype() != want.dtype || t.shape() != want.shape || t.device() != plan_.inference.device)
      op_error(def, ErrorCode::kValue,
               "input " + std::to_string(i) + " is " + describe_inputs(inputs.subspan(i, 1)) +
                   (t.defined() ? " on " + t.device().str() : std::string()) + " but the plan was made for " +
                   dtype_name(want.dtype) + want.shape.str() + " on " + plan_.inference.device.str() +
                   "; plan the call again for new shapes, dtypes or devices");
  }
  return run_plan(plan_, inputs, attrs_);
}

TensorList PlannedOp::run_into(std::span<const Tensor> inputs, std::span<const Tensor> outputs) const {
  if (inputs.size() != signature_.size() || (!outputs.empty() && (int)outputs.size() != plan_.num_outputs()))
    op_error(*plan_.def, ErrorCode::kValue, "run_into: planned for " + std::to_string(signature_.size()) + " inputs and " +
                                                std::to_string(plan_.num_outputs()) + " outputs, run with " +
                                                std::to_string(inputs.size()) + " and " + std::to_string(outputs.size()));
  return run_plan(plan_, inputs, attrs_, outputs.empty() ? nullptr : outputs.data());
}

}  // namespace spore
