// Lite's executor (NOTE [Lite executor], NOTE [Lite runtime]).
#include "lite/executor.h"

#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "lite/loop_graph.h"
#include "spore/error.h"

namespace spore::lite {

namespace {

// Process CPU time (all threads): on a shared, loaded machine the wall clock mostly measures the
// scheduler, while the CPU time a step used is still its own.
double process_cpu_us() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

}  // namespace

Executor::Executor(ir::Graph graph, Device device, std::string label)
    : graph_(std::move(graph)), device_(device), label_(std::move(label)) {
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (!graph_.nodes[n].subgraphs.empty() && graph_.nodes[n].def->id != OpId::k_while_loop)
      throw Error(ErrorCode::kUnsupported, label_ + ": node " + std::to_string(n) + " (" + graph_.nodes[n].def->name +
                                               ") has subgraphs, which Lite runs for while_loop only; "
                                               "run the model in the framework");
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (graph_.nodes[n].def->facts.collective)
      throw Error(ErrorCode::kUnsupported, label_ + ": node " + std::to_string(n) + " (" + graph_.nodes[n].def->name +
                                               ") is a collective across processes (NOTE [Collective ops]); Lite "
                                               "runs one process: export the network without its "
                                               "DistributedDataParallel wrapper or dist:: calls");
  if (fusion_enabled()) stats_ = optimize(graph_);
  weights_.resize(graph_.values.size());
  for (size_t i = 0; i < graph_.values.size(); ++i) {
    const ir::Value& v = graph_.values[i];
    if (v.data.defined()) weights_[i] = device == Device::cpu() ? v.data : v.data.to(device);
  }
  const char* p = std::getenv("SPORE_LITE_PROFILE");
  profile_level_ = p ? std::atoi(p) : 0;
  profile_ = profile_level_ > 0;
}

Executor::~Executor() {
  if (!profile_ || profile_runs_ == 0) return;
  // Per op: time per prediction, node count, share; the slowest first.
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (size_t s = 0; s < steps_.size() && s < profile_us_.size(); ++s) {
    auto& [us, count] = by_op[steps_[s].op ? steps_[s].op->plan().def->name : "while_loop"];
    us += profile_us_[s];
    ++count;
    total += profile_us_[s];
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [name, v] : by_op) rows.emplace_back(v.first, name);
  std::sort(rows.rbegin(), rows.rend());
  std::fprintf(stderr, "lite profile: %s, %lld predictions after the first, %.3f ms of CPU time each in %zu steps (%s)\n", label_.c_str(),
               (long long)profile_runs_, total / 1e3 / (double)profile_runs_, steps_.size(), stats_.str().c_str());
  for (const auto& [us, name] : rows)
    std::fprintf(stderr, "  %-22s %9.3f ms %5.1f %%  %d nodes\n", name.c_str(), us / 1e3 / (double)profile_runs_,
                 100.0 * us / std::max(total, 1e-9), by_op[name].second);
  if (profile_level_ < 2) return;
  for (size_t s = 0; s < steps_.size() && s < profile_us_.size(); ++s) {  // SPORE_LITE_PROFILE=2: every step
    if (!steps_[s].op) continue;
    const DispatchPlan& p = steps_[s].op->plan();
    std::fprintf(stderr, "  step %4zu %-22s -> %-22s %9.3f ms\n", s, p.def->name,
                 p.inference.outputs[0].shape.str().c_str(), profile_us_[s] / 1e3 / (double)profile_runs_);
  }
}

void Executor::plan(const std::vector<Shape>& input_shapes) {
  planned_ = false;
  steps_.clear();
  planned_bytes_ = 0;
  const size_t nv = graph_.values.size();
  std::vector<Tensor> values = weights_;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const ir::Value& v = graph_.values[graph_.inputs[i]];
    values[graph_.inputs[i]] = Tensor::empty(input_shapes[i], v.dtype, device_);
  }
  // Last reader of each value: intermediates are freed after it (graph outputs never are).
  std::vector<int> last(nv, -1);
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    for (uint32_t id : graph_.nodes[n].inputs) last[id] = (int)n;
  for (uint32_t id : graph_.outputs) last[id] = (int)graph_.nodes.size();
  std::vector<Tensor> ins;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const ir::Node& node = graph_.nodes[n];
    Step step;
    step.inputs = node.inputs;
    step.outputs = node.outputs;
    ins.clear();
    for (uint32_t id : node.inputs) ins.push_back(values[id]);
    if (!node.subgraphs.empty()) {
      // NOTE [Lite control flow]: the graph library's loop runner plans the condition and body.
      step.loop_graph = loop_host(node, ins, device_, label_ + ": node " + std::to_string(n) + " (while_loop)");
      step.loop = std::make_unique<graph::LoopRunner>(*step.loop_graph, 0, ins, /*plan_memory=*/true);
      for (size_t o = 0; o < node.outputs.size(); ++o)
        values[node.outputs[o]] = Tensor::empty(ins[o].shape(), ins[o].dtype(), device_);
      for (uint32_t id : node.inputs)
        if (last[id] == (int)n && graph_.values[id].kind == ir::ValueKind::kNode) {
          step.release.push_back(id);
          values[id] = Tensor();
        }
      steps_.push_back(std::move(step));
      continue;
    }
    step.op = std::make_unique<PlannedOp>(node.def->id, ins, node.attrs);
    const Inference& inf = step.op->plan().inference;
    if (inf.num_outputs != (int)node.outputs.size())
      throw Error(ErrorCode::kFormat, label_ + ": node " + std::to_string(n) + " (" + node.def->name + ") names " +
                                          std::to_string(node.outputs.size()) + " outputs; the op makes " +
                                          std::to_string(inf.num_outputs));
    for (int o = 0; o < inf.num_outputs; ++o) {
      const ir::Value& declared = graph_.values[node.outputs[o]];
      const TensorMeta& got = inf.outputs[o];
      bool same = got.dtype == declared.dtype && got.shape.ndim() == (int)declared.dims.size();
      for (int d = 0; same && d < got.shape.ndim(); ++d)
        same = declared.dims[d].symbolic() || declared.dims[d].extent == got.shape[d];
      if (!same)
        throw Error(ErrorCode::kFormat, label_ + ": node " + std::to_string(n) + " (" + node.def->name +
                                            ") computes " + dtype_name(got.dtype) + got.shape.str() +
                                            " where the file declares value " + std::to_string(node.outputs[o]) +
                                            " as " + dtype_name(declared.dtype) + " with " +
                                            std::to_string(declared.dims.size()) + " dimensions");
      values[node.outputs[o]] = Tensor::empty(got.shape, got.dtype, device_);
    }
    for (uint32_t id : node.inputs)
      if (last[id] == (int)n && graph_.values[id].kind == ir::ValueKind::kNode) {
        step.release.push_back(id);
        values[id] = Tensor();
      }
    steps_.push_back(std::move(step));
  }

  // The memory plan. A view's output shares its input's buffer, so values are grouped by the
  // buffer they live in (root), and a root lives until the last read of any of its views. Roots
  // a graph output reaches are not planned: the caller keeps those, so each run makes them fresh.
  std::vector<uint32_t> root(nv);
  for (uint32_t v = 0; v < nv; ++v) root[v] = v;
  std::vector<bool> plannable(nv, false);
  for (const Step& s : steps_) {
    if (!s.op) continue;  // a loop's results: allocated by its runner at each run
    const DispatchPlan& p = s.op->plan();
    for (size_t o = 0; o < s.outputs.size(); ++o) {
      const uint32_t v = s.outputs[o];
      if (p.is_view()) root[v] = root[s.inputs[0]];
      else plannable[v] = !p.fallback && graph_.values[v].kind == ir::ValueKind::kNode;
    }
  }
  std::vector<int> root_last(nv, -1);
  for (uint32_t v = 0; v < nv; ++v) root_last[root[v]] = std::max(root_last[root[v]], last[v]);
  for (uint32_t id : graph_.outputs) plannable[root[id]] = false;
  struct Buffer {
    int64_t bytes = 0;
    bool free = true;
  };
  std::vector<Buffer> buffers;
  std::vector<int> buffer_of(nv, -1);
  std::vector<std::vector<uint32_t>> freed_after(steps_.size());
  for (uint32_t v = 0; v < nv; ++v)
    if (plannable[v] && root_last[v] >= 0 && root_last[v] < (int)steps_.size()) freed_after[(size_t)root_last[v]].push_back(v);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    for (size_t o = 0; o < st.outputs.size(); ++o) {
      const uint32_t v = st.outputs[o];
      if (!plannable[v] || root_last[v] < 0) continue;  // an unread output: the run allocates it
      const TensorMeta& m = st.op->plan().inference.outputs[o];
      const int64_t bytes = std::max<int64_t>(m.shape.numel() * (int64_t)dtype_size(st.op->plan().kernel_output_dtype((int)o)), 1);
      int best = -1;  // the smallest free buffer that fits, else the largest free one (grown)
      for (size_t b = 0; b < buffers.size(); ++b) {
        if (!buffers[b].free) continue;
        const bool fits = buffers[b].bytes >= bytes, best_fits = best >= 0 && buffers[(size_t)best].bytes >= bytes;
        if (best < 0 || (fits && (!best_fits || buffers[b].bytes < buffers[(size_t)best].bytes)) ||
            (!fits && !best_fits && buffers[b].bytes > buffers[(size_t)best].bytes))
          best = (int)b;
      }
      if (best < 0) {
        buffers.push_back({});
        best = (int)buffers.size() - 1;
      }
      buffers[(size_t)best].bytes = std::max(buffers[(size_t)best].bytes, bytes);
      buffers[(size_t)best].free = false;
      buffer_of[v] = best;
    }
    for (uint32_t v : freed_after[s])
      if (buffer_of[v] >= 0) buffers[(size_t)buffer_of[v]].free = true;
  }
  std::vector<Storage*> storages;
  for (const Buffer& b : buffers) {
    storages.push_back(new Storage((size_t)b.bytes, device_));
    planned_bytes_ += b.bytes;
  }
  for (Step& st : steps_) {
    st.preset.assign(st.outputs.size(), Tensor());
    for (size_t o = 0; o < st.outputs.size(); ++o) {
      const int b = buffer_of[st.outputs[o]];
      if (b < 0) continue;
      const TensorMeta& m = st.op->plan().inference.outputs[o];
      st.preset[o] = Tensor::view_of(storages[(size_t)b], 0, m.shape, contiguous_strides(m.shape),
                                     st.op->plan().kernel_output_dtype((int)o));
    }
  }
  for (Storage* s : storages) s->release();
  profile_us_.assign(steps_.size(), 0.0);
  profile_runs_ = 0;
  profile_first_run_done_ = false;
  planned_shapes_ = input_shapes;
  planned_ = true;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
  std::lock_guard<std::mutex> lock(run_mu_);
  // The profile leaves out a plan's first run, which also creates oneDNN's primitives (their JIT
  // compilation would be spread over the ops that happen to create one).
  const bool profile = profile_ && profile_first_run_done_;
  profile_first_run_done_ = true;
  std::vector<Tensor> values = weights_;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) values[graph_.inputs[i]] = inputs[i];
  // An observer (a tracer, a tape) keeps what it sees, which planned buffers would overwrite.
  const bool use_plan = num_dispatch_observers() == 0;
  std::vector<Tensor> ins;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    ins.clear();
    for (uint32_t id : step.inputs) ins.push_back(values[id]);
    const double t0 = profile ? process_cpu_us() : 0;
    TensorList outs = step.loop ? step.loop->run(ins)
                                : step.op->run_into(ins, use_plan ? std::span<const Tensor>(step.preset) : std::span<const Tensor>());
    if (profile) profile_us_[s] += process_cpu_us() - t0;
    for (size_t o = 0; o < step.outputs.size(); ++o) values[step.outputs[o]] = std::move(outs[(int)o]);
    for (uint32_t id : step.release) values[id] = Tensor();
  }
  if (profile) ++profile_runs_;
  std::vector<Tensor> out;
  for (uint32_t id : graph_.outputs) out.push_back(values[id]);
  return out;
}

}  // namespace spore::lite
