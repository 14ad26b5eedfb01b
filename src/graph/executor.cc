// The graph executor (NOTE [Graph executor]).
#include "graph/executor.h"

#include "graph/loop_runner.h"

#include <algorithm>
#include <ctime>

#include "spore/context.h"
#include "spore/error.h"

namespace spore::graph {

Executable::Executable(std::shared_ptr<const Graph> g, const std::vector<Tensor>& example_inputs,
                       std::vector<AttrBinding> bindings, std::vector<std::function<void()>> effects,
                       bool plan_memory)
    : graph_(std::move(g)), bindings_(std::move(bindings)), effects_(std::move(effects)) {
  const Graph& gr = *graph_;
  const size_t nv = gr.num_values(), nn = gr.num_nodes();
  slots_.resize(nv);
  // Placeholders for planning: the example inputs, the bound tensors, and an allocation of the
  // right signature for every node value (planning reads metadata, never values).
  std::vector<Tensor> example(nv);
  auto gin = gr.graph_inputs();
  if (example_inputs.size() != gin.size())
    throw Error(ErrorCode::kInternal, "executor: " + std::to_string(example_inputs.size()) + " example inputs for " +
                                          std::to_string(gin.size()) + " graph inputs");
  Device device = context().device;
  for (size_t i = 0; i < gin.size(); ++i) example[gin[i]] = example_inputs[i];
  if (!example_inputs.empty()) device = example_inputs[0].device();
  for (size_t v = 0; v < nv; ++v) {
    const Value& val = gr.value((ValueId)v);
    if (val.kind == ValueKind::kCaptured || val.kind == ValueKind::kConstant) {
      slots_[v] = val.tensor;
      example[v] = val.tensor;
      if (example_inputs.empty() && val.tensor.defined()) device = val.tensor.device();
    }
  }

  ops_.reserve(nn);
  steps_.reserve(nn);
  std::vector<Tensor> ins;
  std::vector<bool> plannable(nv, false);
  std::vector<int32_t> op_of_node(nn, -1);
  size_t max_in = 0;
  // A node value's placeholder is freed after its last reader, so planning a large graph holds
  // about what one run holds, not every intermediate at once (Lite plans whole CNNs at load).
  std::vector<int32_t> last_reader(nv, -1);
  for (size_t i = 0; i < nn; ++i)
    for (ValueId v : gr.inputs(gr.node((int)i))) last_reader[v] = (int32_t)i;
  for (ValueId v : gr.graph_outputs()) last_reader[v] = (int32_t)nn;
  auto free_placeholders = [&](size_t i) {
    for (ValueId v : gr.inputs(gr.node((int)i)))
      if (last_reader[v] == (int32_t)i && gr.value(v).kind == ValueKind::kNode) example[v] = Tensor();
  };
  for (size_t i = 0; i < nn; ++i) {
    const Node& n = gr.node((int)i);
    ins.clear();
    for (ValueId v : gr.inputs(n)) ins.push_back(example[v]);
    max_in = std::max(max_in, ins.size());
    if (n.def->num_subgraphs) {
      // NOTE [Control flow]: a loop node runs its subgraphs; its outputs are fresh tensors the
      // runner makes (never planned buffers), shaped like its state inputs.
      loops_.push_back(std::make_unique<LoopRunner>(gr, (int)i, ins, plan_memory));
      auto outs = gr.outputs(n);
      for (size_t o = 0; o < outs.size(); ++o) {
        const TensorMeta& m = gr.value(outs[o]).meta;
        example[outs[o]] = Tensor::empty(m.shape, m.dtype, ins.empty() ? device : ins[0].device());
      }
      ins.clear();
      free_placeholders(i);
      continue;
    }
    op_of_node[i] = (int32_t)ops_.size();
    ops_.emplace_back(n.op(), ins, n.attrs);
    const PlannedOp& op = ops_.back();
    const DispatchPlan& p = op.plan();
    auto outs = gr.outputs(n);
    if ((int)outs.size() != p.num_outputs())
      throw Error(ErrorCode::kInternal, std::string("executor: node ") + std::to_string(i) + " (" + n.def->name +
                                            ") has " + std::to_string(outs.size()) + " outputs, its plan " +
                                            std::to_string(p.num_outputs()));
    for (size_t o = 0; o < outs.size(); ++o) {
      const TensorMeta& m = p.inference.outputs[o];
      const TensorMeta& want = gr.value(outs[o]).meta;
      if (m.shape != want.shape || m.dtype != want.dtype)
        throw Error(ErrorCode::kInternal, std::string("executor: node ") + std::to_string(i) + " (" + n.def->name +
                                              ") plans output " + std::to_string(o) + " as " + dtype_name(m.dtype) +
                                              m.shape.str() + " but the graph says " + dtype_name(want.dtype) +
                                              want.shape.str());
      example[outs[o]] = Tensor::empty(m.shape, m.dtype, p.inference.device);
      plannable[outs[o]] = !p.is_view() && !p.fallback;
    }
    device = p.inference.device;
    ins.clear();
    free_placeholders(i);
  }
  // Graph outputs are returned to the caller: fresh tensors each run, never a planned buffer;
  // nor is anything a graph output views.
  {
    std::vector<ValueId> root(nv);
    for (size_t v = 0; v < nv; ++v) root[v] = (ValueId)v;
    for (size_t i = 0; i < nn; ++i) {
      const Node& n = gr.node((int)i);
      if (n.def->view && n.num_inputs)
        for (ValueId o : gr.outputs(n)) root[o] = root[gr.inputs(n)[0]];
    }
    for (ValueId v : gr.graph_outputs()) {
      plannable[v] = false;
      plannable[root[v]] = false;
    }
  }
  memory_ = graph::plan_memory(gr, plannable);
  planned_ = plan_memory;

  // Buffers, and a contiguous tensor over its buffer for every planned value.
  std::vector<Storage*> storages;
  for (int64_t bytes : memory_.buffer_bytes) storages.push_back(new Storage((size_t)std::max<int64_t>(bytes, 1), device));
  std::vector<std::vector<ValueId>> drops(nn);
  for (size_t v = 0; v < nv; ++v) {
    int32_t u = memory_.last_use[v];
    if (gr.value((ValueId)v).kind == ValueKind::kInput && u >= 0 && u < (int)nn) drops[u].push_back((ValueId)v);
    if (gr.value((ValueId)v).kind == ValueKind::kNode && u >= 0 && u < (int)nn) drops[u].push_back((ValueId)v);
  }
  for (size_t i = 0, loop = 0; i < nn; ++i) {
    const Node& n = gr.node((int)i);
    Step s{};
    s.loop = op_of_node[i] < 0;
    s.op = s.loop ? (uint32_t)loop++ : (uint32_t)op_of_node[i];
    s.in_first = (uint32_t)operand_ids_.size();
    s.num_in = n.num_inputs;
    for (ValueId v : gr.inputs(n)) operand_ids_.push_back(v);
    s.out_first = (uint32_t)operand_ids_.size();
    s.num_out = n.num_outputs;
    for (ValueId v : gr.outputs(n)) operand_ids_.push_back(v);
    s.drop_first = (uint32_t)drop_ids_.size();
    s.num_drop = (uint32_t)drops[i].size();
    drop_ids_.insert(drop_ids_.end(), drops[i].begin(), drops[i].end());
    steps_.push_back(s);
  }
  preset_.resize(operand_ids_.size());
  if (planned_) {
    for (const Step& s : steps_)
      for (uint32_t o = 0; o < s.num_out; ++o) {
        ValueId v = operand_ids_[s.out_first + o];
        int32_t b = memory_.buffer_of[v];
        if (b < 0) continue;
        const TensorMeta& m = gr.value(v).meta;
        preset_[s.out_first + o] = Tensor::view_of(storages[b], 0, m.shape, contiguous_strides(m.shape), m.dtype);
      }
  }
  for (Storage* st : storages) st->release();
  scratch_.resize(std::max<size_t>(max_in, 1));
  // Bindings named graph nodes; ops_ skips loop nodes, so they name their PlannedOp instead.
  for (AttrBinding& b : bindings_) {
    if (b.node < 0 || (size_t)b.node >= nn || op_of_node[b.node] < 0)
      throw Error(ErrorCode::kInternal, "executor: an attribute binding names node " + std::to_string(b.node) +
                                            ", which has no planned op");
    b.node = op_of_node[b.node];
  }
}

Executable::~Executable() = default;

namespace {

// Process CPU time (all threads) by default: on a shared, loaded machine the wall clock mostly
// measures the scheduler, while the CPU time a step used is still its own.
double clock_us(bool wall) {
  timespec ts;
  clock_gettime(wall ? CLOCK_MONOTONIC : CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

}  // namespace

void Executable::set_profile(bool on, bool wall) {
  profile_ = on;
  profile_wall_ = wall;
  profile_us_.resize(steps_.size(), 0.0);
}

std::vector<Tensor> Executable::run(const std::vector<Tensor>& inputs) {
  const Graph& gr = *graph_;
  auto gin = gr.graph_inputs();
  for (size_t i = 0; i < gin.size(); ++i) slots_[gin[i]] = inputs[i];
  for (const AttrBinding& b : bindings_) ops_[b.node].set_attrs(b.refresh());
  // NOTE [Graph executor]: a tape (or any gradient recorder) around the run keeps the tensors it
  // saw; planned buffers are reused within and across runs, so with one attached every output is
  // a fresh allocation, as in eager mode.
  const bool use_plan = planned_ && num_dispatch_observers() == 0;
  Tensor* slots = slots_.data();
  const ValueId* ids = operand_ids_.data();
  Tensor* scratch = scratch_.data();
  for (size_t step = 0; step < steps_.size(); ++step) {
    const Step& s = steps_[step];
    for (uint32_t k = 0; k < s.num_in; ++k) scratch[k] = slots[ids[s.in_first + k]];
    const double t0 = profile_ ? clock_us(profile_wall_) : 0;
    if (s.loop) {
      // Any number of results (NOTE [Control-flow results]), in a vector of the runner's.
      std::vector<Tensor> outs = loops_[s.op]->run({scratch, s.num_in});
      for (uint32_t o = 0; o < s.num_out; ++o) slots[ids[s.out_first + o]] = std::move(outs[o]);
    } else {
      TensorList outs = use_plan ? ops_[s.op].run_into({scratch, s.num_in}, {preset_.data() + s.out_first, s.num_out})
                                 : ops_[s.op].run_into({scratch, s.num_in}, {preset_.data() + s.out_first, 0});
      for (uint32_t o = 0; o < s.num_out; ++o) slots[ids[s.out_first + o]] = std::move(outs[o]);
    }
    if (profile_) profile_us_[step] += clock_us(profile_wall_) - t0;
    for (uint32_t k = 0; k < s.num_drop; ++k) slots[drop_ids_[s.drop_first + k]] = Tensor();
  }
  for (uint32_t k = 0; k < scratch_.size(); ++k) scratch[k] = Tensor();
  std::vector<Tensor> results;
  results.reserve(gr.graph_outputs().size());
  for (ValueId v : gr.graph_outputs()) results.push_back(slots[v]);
  for (ValueId v : gr.graph_outputs())
    if (gr.value(v).kind != ValueKind::kCaptured && gr.value(v).kind != ValueKind::kConstant) slots[v] = Tensor();
  for (ValueId v : gin) slots[v] = Tensor();
  for (const auto& e : effects_) e();
  return results;
}

}  // namespace spore::graph
