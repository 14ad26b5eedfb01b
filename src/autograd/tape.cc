// The tape and the backward walk (NOTE [Autodiff] in include/spore/autograd.h).
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "spore/autograd.h"
#include "spore/op_registry.h"
#include "spore/ops.h"

namespace spore {

namespace {

struct Record {
  const OpDef* def;
  std::vector<Tensor> inputs;
  Attrs attrs;
  std::vector<Tensor> outputs;
};

// Records ops that depend on the sources; forwards every op to the enclosing observer so that
// nested tapes (gradients of gradients) and graph tracing see them too.
class Tape final : public DispatchObserver {
 public:
  explicit Tape(const std::vector<Tensor>& sources) {
    for (const Tensor& s : sources) tracked_.insert(s.impl());
    outer_ = set_dispatch_observer(this);
  }
  ~Tape() override { detach(); }
  void detach() {
    if (attached_) set_dispatch_observer(outer_);
    attached_ = false;
  }

  void on_op(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    if (outer_) outer_->on_op(def, inputs, attrs, outputs);
    bool depends = std::any_of(inputs.begin(), inputs.end(),
                               [&](const Tensor& t) { return tracked_.count(t.impl()); });
    if (!depends) return;
    bool any_float = false;
    for (const Tensor& o : outputs) {
      if (is_floating(o.dtype())) {
        tracked_.insert(o.impl());
        any_float = true;
      }
    }
    if (any_float)
      records_.push_back({&def, {inputs.begin(), inputs.end()}, attrs, {outputs.begin(), outputs.end()}});
  }

  bool tracked(const Tensor& t) const { return tracked_.count(t.impl()) != 0; }
  const std::vector<Record>& records() const { return records_; }
  DispatchObserver* outer() const { return outer_; }

 private:
  std::unordered_set<const TensorImpl*> tracked_;
  std::vector<Record> records_;
  DispatchObserver* outer_ = nullptr;
  bool attached_ = true;
};

void accumulate(std::unordered_map<const TensorImpl*, Tensor>& grads, const Tensor& x, Tensor g) {
  if (g.shape() != x.shape()) g = sum_to(g, x.shape());
  if (g.dtype() != x.dtype()) g = cast(g, x.dtype());
  auto [it, inserted] = grads.try_emplace(x.impl(), g);
  if (!inserted) it->second = add(it->second, g);
}

// Gradients of `output` (seeded with `seed`) for every tensor the tape tracked.
std::unordered_map<const TensorImpl*, Tensor> backward(const Tape& tape, const Tensor& output,
                                                        const Tensor& seed) {
  std::unordered_map<const TensorImpl*, Tensor> grads;
  grads.emplace(output.impl(), seed);
  const auto& recs = tape.records();
  for (auto it = recs.rbegin(); it != recs.rend(); ++it) {
    const Record& r = *it;
    std::vector<Tensor> gouts(r.outputs.size());
    bool any = false;
    for (size_t o = 0; o < r.outputs.size(); ++o) {
      auto g = grads.find(r.outputs[o].impl());
      if (g != grads.end()) {
        gouts[o] = g->second;
        any = true;
      }
    }
    if (!any) continue;
    for (size_t o = 0; o < r.outputs.size(); ++o)
      if (!gouts[o].defined()) gouts[o] = zeros_like(r.outputs[o]);
    if (!r.def->backward)
      throw Error(ErrorCode::kUnsupported,
                  std::string("value_and_grad: op '") + r.def->name +
                      "' lies on the path from the differentiated tensors to the output but has no "
                      "backward rule");
    std::vector<Tensor> gins = r.def->backward(BackwardArgs{r.inputs, r.outputs, gouts, r.attrs});
    for (size_t i = 0; i < r.inputs.size() && i < gins.size(); ++i)
      if (gins[i].defined() && tape.tracked(r.inputs[i])) accumulate(grads, r.inputs[i], gins[i]);
  }
  return grads;
}

Tensor grad_or_zeros(const std::unordered_map<const TensorImpl*, Tensor>& grads, const Tensor& x) {
  auto it = grads.find(x.impl());
  return it != grads.end() ? it->second : zeros_like(x);
}

}  // namespace

std::function<ValueAndGrad(const std::vector<Tensor>&)> value_and_grad(TensorFn fn, GradPosition pos,
                                                                        std::vector<Parameter> weights,
                                                                        std::optional<Tensor> sens) {
  return [fn = std::move(fn), pos = std::move(pos), weights = std::move(weights),
          sens = std::move(sens)](const std::vector<Tensor>& inputs) {
    std::vector<Tensor> sources;
    for (int p : pos.positions) {
      if (p < 0 || p >= (int)inputs.size())
        throw Error(ErrorCode::kValue, "value_and_grad: grad_position " + std::to_string(p) +
                                           " is outside the " + std::to_string(inputs.size()) +
                                           " inputs of the function");
      if (!is_floating(inputs[p].dtype()))
        throw Error(ErrorCode::kDType, "value_and_grad: input " + std::to_string(p) + " is " +
                                           dtype_name(inputs[p].dtype()) +
                                           "; only floating-point inputs have gradients");
      sources.push_back(inputs[p]);
    }
    std::vector<Tensor> weight_values;
    for (const Parameter& w : weights) {
      if (!w.defined()) throw Error(ErrorCode::kValue, "value_and_grad: a weight is an empty Parameter");
      weight_values.push_back(w.value());
      sources.push_back(w.value());
    }

    ValueAndGrad result;
    Tape tape(sources);
    result.value = fn(inputs);
    tape.detach();  // the backward pass is recorded by the enclosing observer, if any

    if (!weights.empty()) {
      bool any_used = std::any_of(weight_values.begin(), weight_values.end(), [&](const Tensor& w) {
        for (const auto& r : tape.records())
          for (const Tensor& in : r.inputs)
            if (in.impl() == w.impl()) return true;
        return false;
      });
      if (!any_used) {
        std::string names;
        for (const Parameter& w : weights) names += (names.empty() ? "" : ", ") + w.name();
        throw Error(ErrorCode::kValue,
                    "value_and_grad: none of the " + std::to_string(weights.size()) +
                        " weights passed (" + names +
                        ") is used by the function, so training would change nothing; pass the "
                        "parameters of the network the function calls (e.g. net.trainable_params())");
      }
    }

    Tensor seed;
    if (sens) {
      seed = *sens;
      if (seed.shape() != result.value.shape())
        throw Error(ErrorCode::kShape, "value_and_grad: sens has shape " + seed.shape().str() +
                                           " but the output has shape " + result.value.shape().str());
    } else {
      if (result.value.numel() != 1)
        throw Error(ErrorCode::kShape, "value_and_grad: the function's output has shape " +
                                           result.value.shape().str() +
                                           "; gradients need a scalar output or an explicit sens");
      seed = ones_like(result.value);
    }
    auto grads = tape.tracked(result.value) ? backward(tape, result.value, seed)
                                            : std::unordered_map<const TensorImpl*, Tensor>{};
    for (int p : pos.positions) result.input_grads.push_back(grad_or_zeros(grads, inputs[p]));
    for (const Tensor& w : weight_values) result.weight_grads.push_back(grad_or_zeros(grads, w));
    return result;
  };
}

std::function<ValueAndGrad(const std::vector<Tensor>&)> grad(TensorFn fn, GradPosition pos,
                                                              std::vector<Parameter> weights) {
  return value_and_grad(std::move(fn), std::move(pos), std::move(weights));
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  int lead = g.ndim() - shape.ndim();
  if (lead < 0)
    throw Error(ErrorCode::kShape, "sum_to: gradient " + g.shape().str() + " has fewer axes than " + shape.str());
  std::vector<int64_t> axes;
  for (int i = 0; i < g.ndim(); ++i)
    if (i < lead || (shape[i - lead] == 1 && g.shape()[i] != 1)) axes.push_back(i);
  Tensor r = axes.empty() ? g : sum(g, axes, /*keepdims=*/true);
  return reshape(r, shape.to_vector());
}

NoGradGuard::NoGradGuard() : saved_(set_dispatch_observer(nullptr)) {}
NoGradGuard::~NoGradGuard() { set_dispatch_observer(static_cast<DispatchObserver*>(saved_)); }

}  // namespace spore
