// The tracer (NOTE [Tracing]): an observer that records, a guard that refuses host reads, and
// the numbering of tensors into graph values.
#include "graph/tracer.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "spore/error.h"
#include "spore/host_read_guard.h"
#include "spore/node.h"

namespace spore::graph {

namespace {

class Tracer;
thread_local Tracer* t_tracer = nullptr;

class Tracer final : public DispatchObserver, public HostReadGuard {
 public:
  explicit Tracer(std::string name) : DispatchObserver(/*records_gradients=*/false), name_(std::move(name)) {}

  void start() {
    base_depth_ = dispatch_depth();
    outer_tracer_ = std::exchange(t_tracer, this);
    outer_guard_ = set_host_read_guard(this);
    stack_index_ = num_dispatch_observers();
    push_dispatch_observer(this);
    attached_ = true;
  }
  void stop() noexcept {
    if (!attached_) return;
    pop_dispatch_observer(this);
    set_host_read_guard(outer_guard_);
    t_tracer = outer_tracer_;
    attached_ = false;
  }
  ~Tracer() override { stop(); }

  void on_op(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
             std::span<const Tensor> outputs) override {
    // Only the calls the function made: not the casts and ops dispatched inside another op.
    if (paused_ || dispatch_depth() > base_depth_ + 1) return;
    nodes_.record(def, inputs, attrs, outputs);
    if (!pending_subgraphs_.empty()) {
      subgraphs_.emplace_back((int)nodes_.size() - 1, std::move(pending_subgraphs_));
      pending_subgraphs_.clear();
    }
    if (pending_refresh_) {
      bindings_.push_back({(int)nodes_.size() - 1, std::move(pending_refresh_)});
      pending_refresh_ = nullptr;
    }
  }

  void on_host_read(const char* what) override {
    std::string last = "(none yet)";
    if (!nodes_.empty()) {
      last = "'";
      last += nodes_.nodes().back().def->name;
      last += "' (op " + std::to_string(nodes_.size()) + ")";
    }
    throw Error(ErrorCode::kValue,
                name_ + ": the traced function reads a tensor's value on the host (" + what +
                    ", e.g. item(), to_vector(), printing) after " + last +
                    "; a compiled graph cannot depend on a value it has not computed, and tracing would "
                    "bake this one value in. Either keep the computation in tensor ops (a data-dependent "
                    "branch: spore::cond in include/spore/control_flow.h), or run this function "
                    "eagerly (without jit, ExecMode::kEager) and read the value afterwards");
  }

  std::string name_;
  NodeList nodes_;
  std::vector<AttrBinding> bindings_;
  std::vector<std::function<void()>> effects_;
  std::function<Attrs()> pending_refresh_;
  bool paused_ = false;
  int stack_index_ = 0;  // this tracer's place on the thread's observer stack  // a while_loop's subgraphs are being traced or its first run is going
  std::vector<std::shared_ptr<const Graph>> pending_subgraphs_;
  std::vector<std::pair<int, std::vector<std::shared_ptr<const Graph>>>> subgraphs_;  // by traced node

 private:
  int base_depth_ = 0;
  bool attached_ = false;
  Tracer* outer_tracer_ = nullptr;
  HostReadGuard* outer_guard_ = nullptr;
};

}  // namespace

bool is_tracing() { return t_tracer != nullptr; }

void bind_next_op_attrs(std::function<Attrs()> refresh) {
  if (t_tracer) t_tracer->pending_refresh_ = std::move(refresh);
}

void on_each_run(std::function<void()> effect) {
  if (t_tracer) t_tracer->effects_.push_back(std::move(effect));
}

namespace {
// Pauses this thread's tracer and gradient recorders for a scope (NOTE [Control flow]).
//
// Tracing a subgraph hides everything from the tapes (those runs are thrown away). The loop's
// eager run (`allow_host_reads`) stays visible to them: a tape outside the trace
// (value_and_grad(jit(f))) differentiates this first call through the unrolled ops, as it does
// later calls through the executor's; a tape inside the trace sees them too, but it sees the
// loop node after them, and the node refuses reverse mode.
class PauseRecording {
 public:
  explicit PauseRecording(bool allow_host_reads)
      : tracer_(t_tracer), token_(allow_host_reads ? -1 : pause_gradient_recording()) {
    if (tracer_) tracer_->paused_ = true;
    if (allow_host_reads) {
      guard_ = set_host_read_guard(nullptr);
      swapped_guard_ = true;
      t_tracer = nullptr;  // is_tracing() is false while the loop runs eagerly
    }
  }
  ~PauseRecording() {
    if (swapped_guard_) {
      set_host_read_guard(guard_);
      t_tracer = tracer_;
    }
    if (tracer_) tracer_->paused_ = false;
    if (token_ >= 0) resume_gradient_recording(token_);
  }
  PauseRecording(const PauseRecording&) = delete;
  PauseRecording& operator=(const PauseRecording&) = delete;

 private:
  Tracer* tracer_;
  int token_;
  HostReadGuard* guard_ = nullptr;
  bool swapped_guard_ = false;
};
}  // namespace

Trace trace_subgraph(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                     const std::vector<Tensor>& inputs, const std::string& name) {
  PauseRecording pause(/*allow_host_reads=*/false);
  return trace(fn, inputs, name);
}

void run_untraced(const std::function<void()>& fn) {
  PauseRecording pause(/*allow_host_reads=*/true);
  fn();
}

void record_with_subgraphs(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                           std::span<const Tensor> outputs, std::vector<std::shared_ptr<const Graph>> subgraphs) {
  if (!t_tracer) return;
  t_tracer->pending_subgraphs_ = std::move(subgraphs);
  // Tapes outside the trace saw the loop's unrolled ops (run_untraced); the node is only for the
  // tracer and the tapes inside it. The gradient floor hides gradient recorders below it, so it
  // is raised to the tracer's place for this one notification (resume_gradient_recording sets
  // the floor to its token; it never goes below a NoGradGuard's).
  const int token = pause_gradient_recording();
  resume_gradient_recording(std::max(token, t_tracer->stack_index_));
  try {
    notify_dispatch_observers(def, inputs, attrs, outputs);
  } catch (...) {
    resume_gradient_recording(token);
    t_tracer->pending_subgraphs_.clear();
    throw;
  }
  resume_gradient_recording(token);
  t_tracer->pending_subgraphs_.clear();
}

Trace trace(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
            const std::vector<Tensor>& inputs, const std::string& name) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].defined())
      throw Error(ErrorCode::kValue, name + ": input " + std::to_string(i) + " is an undefined tensor");
  Trace out;
  std::optional<Tracer> tracer_slot(std::in_place, name);
  Tracer& tracer = *tracer_slot;
  tracer.start();
  out.outputs = fn(inputs);
  tracer.stop();
  for (size_t i = 0; i < out.outputs.size(); ++i)
    if (!out.outputs[i].defined())
      throw Error(ErrorCode::kValue, name + ": result " + std::to_string(i) +
                                         " of the traced function is an undefined tensor; return only "
                                         "tensors the function computed (or received)");

  const NodeList& list = tracer.nodes_;
  // NOTE [Tracing]: a tensor a node made that the function kept beyond the call (an optimizer's
  // moment estimates, made by `full` in the first step and stored in the optimizer) and that an
  // op writes in place is state: later runs must read what the last run left there, not make it
  // afresh. It becomes a captured value bound to that tensor, and the node that made it goes.
  std::unordered_map<const TensorImpl*, int> held;  // references this function holds
  std::unordered_map<const TensorImpl*, bool> made, written;
  for (const Node& n : list.nodes()) {
    auto ins = list.inputs(n);
    for (size_t i = 0; i < ins.size(); ++i) {
      ++held[ins[i].impl()];
      if (n.def->writes((int)i)) written[ins[i].impl()] = true;
    }
    for (const Tensor& o : list.outputs(n)) {
      ++held[o.impl()];
      made[o.impl()] = true;
    }
  }
  for (const Tensor& o : out.outputs) ++held[o.impl()];
  auto is_state = [&](const Tensor& t) {
    const TensorImpl* p = t.impl();
    return made.count(p) && written.count(p) && p->refs.load(std::memory_order_relaxed) > held[p];
  };

  Graph& g = out.graph;
  std::unordered_map<const TensorImpl*, ValueId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    ValueId v = g.add_input(value_meta(inputs[i]), "in" + std::to_string(i));
    ids.emplace(inputs[i].impl(), v);  // an input passed twice is read through its first position
  }
  auto value_of = [&](const Tensor& t) {
    auto it = ids.find(t.impl());
    if (it != ids.end()) return it->second;
    ValueId v = g.add_captured(t, "captured" + std::to_string(g.captured().size()));
    ids.emplace(t.impl(), v);
    return v;
  };
  std::vector<int> node_of_trace(list.size(), -1);
  std::vector<ValueId> in_ids;
  std::vector<TensorMeta> out_metas;
  const auto nodes = list.nodes();
  for (size_t k = 0; k < nodes.size(); ++k) {
    const Node& n = nodes[k];
    auto outs = list.outputs(n);
    bool all_state = n.def->writes_mask == 0 && !outs.empty();
    for (const Tensor& o : outs) all_state &= is_state(o);
    if (all_state) continue;  // the state tensors are captured on first read below
    in_ids.clear();
    for (const Tensor& t : list.inputs(n)) in_ids.push_back(value_of(t));
    out_metas.clear();
    for (const Tensor& o : outs) out_metas.push_back(value_meta(o));
    int node = g.add_node(*n.def, n.attrs, in_ids, out_metas);
    node_of_trace[k] = node;
    for (auto& [traced, subs] : tracer.subgraphs_)
      if (traced == (int)k) g.set_subgraphs(node, subs);
    for (size_t o = 0; o < outs.size(); ++o)
      if (!is_state(outs[o])) ids[outs[o].impl()] = g.outputs(node)[o];
  }
  std::vector<ValueId> results;
  for (const Tensor& t : out.outputs) results.push_back(value_of(t));
  g.set_outputs(std::move(results));
  g.validate();

  for (AttrBinding& b : tracer.bindings_) {
    b.node = node_of_trace[b.node];
    if (b.node >= 0) out.bindings.push_back(std::move(b));
  }
  out.effects = std::move(tracer.effects_);
  return out;
}

}  // namespace spore::graph
