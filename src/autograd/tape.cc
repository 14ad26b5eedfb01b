// The tape and the backward walk (NOTE [Autodiff] in include/spore/autograd.h).
#include <algorithm>
#include <memory>

#include "autograd/ptr_map.h"
#include "spore/autograd.h"
#include "spore/node.h"
#include "spore/ops.h"

namespace spore {

namespace {

using autograd_detail::PtrMap;

// The containers of one tape. A training loop runs the same small graph thousands of times, so
// they are kept per thread and reused (cleared, capacity kept) instead of being reallocated for
// every step; nested tapes (gradients of gradients) each take their own.
struct TapeBuffers {
  PtrMap<char> tracked;  // a set: the value is unused
  NodeList nodes;        // the recorded ops (include/spore/node.h), over one flat list of values
  PtrMap<Tensor> grads;
  std::vector<Tensor> gouts;
  void clear() {
    tracked.clear();
    nodes.clear();
    grads.clear();
    gouts.clear();
  }
};

class BufferPool {
 public:
  std::unique_ptr<TapeBuffers> take() {
    if (free_.empty()) return std::make_unique<TapeBuffers>();
    std::unique_ptr<TapeBuffers> b = std::move(free_.back());
    free_.pop_back();
    return b;
  }
  void give_back(std::unique_ptr<TapeBuffers> b) {
    b->clear();
    // Keep a few, and not the ones a huge graph grew: their slots would sit idle.
    if (free_.size() < 4 && b->tracked.capacity() <= (1u << 16)) free_.push_back(std::move(b));
  }

 private:
  std::vector<std::unique_ptr<TapeBuffers>> free_;
};
thread_local BufferPool t_buffer_pool;

// Records, as Nodes, the ops that depend on the sources. It is a gradient recorder on the
// thread's observer stack (NOTE [Dispatch observers]): enclosing tapes (gradients of gradients)
// and a tracer sit on the same stack and see every op themselves.
class Tape final : public DispatchObserver {
 public:
  explicit Tape(const std::vector<Tensor>& sources)
      : DispatchObserver(/*records_gradients=*/true),
        buffers_(t_buffer_pool.take()),
        tracked_(buffers_->tracked),
        nodes_(buffers_->nodes) {
    for (const Tensor& s : sources) tracked_.get(s.impl()) = 1;
    push_dispatch_observer(this);
  }
  ~Tape() override {
    detach();
    t_buffer_pool.give_back(std::move(buffers_));
  }
  void detach() {
    if (attached_) pop_dispatch_observer(this);
    attached_ = false;
  }

  void on_op(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    bool depends = std::any_of(inputs.begin(), inputs.end(),
                               [&](const Tensor& t) { return tracked_.contains(t.impl()); });
    if (!depends) return;
    bool any_float = false;
    for (const Tensor& o : outputs) {
      if (is_floating(o.dtype())) {
        tracked_.get(o.impl()) = 1;
        any_float = true;
      }
    }
    if (!any_float) return;
    nodes_.record(def, inputs, attrs, outputs);
  }

  bool tracked(const Tensor& t) const { return tracked_.contains(t.impl()); }
  const NodeList& nodes() const { return nodes_; }
  TapeBuffers& buffers() const { return *buffers_; }

 private:
  std::unique_ptr<TapeBuffers> buffers_;
  PtrMap<char>& tracked_;
  NodeList& nodes_;
  bool attached_ = true;
};

void accumulate(PtrMap<Tensor>& grads, const Tensor& x, Tensor g) {
  if (g.shape() != x.shape()) g = sum_to(g, x.shape());
  if (g.dtype() != x.dtype()) g = cast(g, x.dtype());
  bool inserted = false;
  Tensor& slot = grads.get(x.impl(), &inserted);
  slot = inserted ? std::move(g) : add(slot, g);
}

// Gradients of `output` (seeded with `seed`) for every tensor the tape tracked, in the tape's
// buffers (valid while the tape lives). `after_node(i)`, when given, runs once the walk is past
// node i (NOTE [Gradient-ready hook]).
const PtrMap<Tensor>& backward(const Tape& tape, const Tensor& output, const Tensor& seed,
                               const std::function<void(size_t)>& after_node = nullptr) {
  PtrMap<Tensor>& grads = tape.buffers().grads;
  grads.get(output.impl()) = seed;
  const NodeList& list = tape.nodes();
  const std::span<const Node> nodes = list.nodes();
  std::vector<Tensor>& gouts = tape.buffers().gouts;
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    if (after_node && it != nodes.rbegin()) after_node((size_t)(nodes.rend() - it));
    const Node& r = *it;
    const std::span<const Tensor> ins = list.inputs(r), outs = list.outputs(r);
    gouts.assign(outs.size(), Tensor());
    bool any = false;
    for (size_t o = 0; o < outs.size(); ++o) {
      if (const Tensor* g = grads.find(outs[o].impl())) {
        gouts[o] = *g;
        any = true;
      }
    }
    if (!any) continue;
    for (size_t o = 0; o < outs.size(); ++o)
      if (!gouts[o].defined()) gouts[o] = zeros_like(outs[o]);
    if (!r.def->backward)
      throw Error(ErrorCode::kUnsupported,
                  std::string("value_and_grad: op '") + r.def->name +
                      "' lies on the path from the differentiated tensors to the output but has no "
                      "backward rule" +
                      // NOTE [Control flow]: a traced while_loop under value_and_grad lands here.
                      (r.def->num_subgraphs
                           ? std::string("; reverse-mode gradients through a loop whose trip count depends on "
                                         "tensor values are not supported (JAX refuses them too): loop a fixed "
                                         "number of times in C++ (the trace unrolls it), use spore::cond, or "
                                         "differentiate the eager function (value_and_grad outside jit)")
                           : std::string()));
    BackwardArgs args{ins, outs, gouts, r.attrs};
    args.wanted = 0;
    for (size_t i = 0; i < ins.size(); ++i)
      if (i >= 64 || tape.tracked(ins[i])) args.wanted |= i < 64 ? uint64_t{1} << i : 0;
    std::vector<Tensor> gins = r.def->backward(args);
    for (size_t i = 0; i < ins.size() && i < gins.size(); ++i)
      if (gins[i].defined() && tape.tracked(ins[i])) accumulate(grads, ins[i], std::move(gins[i]));
  }
  if (after_node && !nodes.empty()) after_node(0);
  return grads;
}

Tensor grad_or_zeros(const PtrMap<Tensor>& grads, const Tensor& x) {
  const Tensor* g = grads.find(x.impl());
  return g ? *g : zeros_like(x);
}

}  // namespace

std::function<ValueAndGrad(const std::vector<Tensor>&)> value_and_grad(TensorFn fn, GradPosition pos,
                                                                        std::vector<Parameter> weights,
                                                                        std::optional<Tensor> sens,
                                                                        WeightGradHook on_weight_grad) {
  return [fn = std::move(fn), pos = std::move(pos), weights = std::move(weights), sens = std::move(sens),
          on_weight_grad = std::move(on_weight_grad)](const std::vector<Tensor>& inputs) {
    std::vector<Tensor> sources;
    sources.reserve(pos.positions.size() + weights.size());
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
    weight_values.reserve(weights.size());
    for (const Parameter& w : weights) {
      if (!w.defined()) throw Error(ErrorCode::kValue, "value_and_grad: a weight is an empty Parameter");
      weight_values.push_back(w.value());
      sources.push_back(w.value());
    }

    ValueAndGrad result;
    result.input_grads.reserve(pos.positions.size());
    result.weight_grads.reserve(weights.size());
    Tape tape(sources);
    result.value = fn(inputs);
    tape.detach();  // the backward pass is recorded by the enclosing observer, if any

    if (!weights.empty()) {
      // Stops at the first weight some recorded op reads (usually the first one checked).
      bool any_used = std::any_of(weight_values.begin(), weight_values.end(), [&](const Tensor& w) {
        for (const Node& r : tape.nodes().nodes())
          for (const Tensor& in : tape.nodes().inputs(r))
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
    // NOTE [Gradient-ready hook]: weight w is final once the walk is past the first node reading it.
    std::vector<std::vector<size_t>> final_after;  // node index -> weights final after it
    std::vector<char> reported;  // allocated only with a hook: a plain step allocates nothing here
    std::function<void(size_t)> after_node;
    if (on_weight_grad) reported.assign(weights.size(), 0);
    if (on_weight_grad && tape.tracked(result.value)) {
      const NodeList& list = tape.nodes();
      final_after.resize(list.nodes().size());
      std::vector<char> seen(weight_values.size(), 0);
      for (size_t n = 0; n < list.nodes().size(); ++n)
        for (const Tensor& in : list.inputs(list.nodes()[n]))
          for (size_t w = 0; w < weight_values.size(); ++w)
            if (!seen[w] && in.impl() == weight_values[w].impl()) {
              seen[w] = 1;
              final_after[n].push_back(w);
            }
      after_node = [&](size_t n) {
        for (size_t w : final_after[n])
          if (const Tensor* g = tape.buffers().grads.find(weight_values[w].impl())) {
            reported[w] = 1;
            on_weight_grad(w, *g);
          }
      };
    }
    const PtrMap<Tensor>& grads =
        tape.tracked(result.value) ? backward(tape, result.value, seed, after_node) : tape.buffers().grads;
    for (int p : pos.positions) result.input_grads.push_back(grad_or_zeros(grads, inputs[p]));
    for (const Tensor& w : weight_values) result.weight_grads.push_back(grad_or_zeros(grads, w));
    if (on_weight_grad)
      for (size_t w = 0; w < weights.size(); ++w)
        if (!reported[w]) on_weight_grad(w, result.weight_grads[w]);
    return result;
  };
}

std::function<ValueAndGrad(const std::vector<Tensor>&)> grad(TensorFn fn, GradPosition pos,
                                                              std::vector<Parameter> weights) {
  return value_and_grad(std::move(fn), std::move(pos), std::move(weights));
}

NoGradGuard::NoGradGuard() : token_(pause_gradient_recording()) {}
NoGradGuard::~NoGradGuard() { resume_gradient_recording(token_); }

}  // namespace spore
