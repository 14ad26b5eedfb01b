// Lite's executor: the adapter to the graph library (NOTE [Lite executor], NOTE [Lite runtime]).
#include "lite/executor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "graph/passes/passes.h"
#include "lite/plan_graph.h"
#include "spore/error.h"

namespace spore::lite {

bool fusion_enabled() {
  const char* v = std::getenv("SPORE_LITE_FUSION");
  return !(v && std::strcmp(v, "0") == 0);
}

namespace {

// Lite's pipeline: the inference rewrites and folding of results up to 64 MiB, folded views kept
// as the op made them, elementwise fusion, and dead code dropped. Fusion keeps every bit (the
// fused kernel runs each op's own loop, rounding per op: NOTE [Elementwise fusion]), so Lite's
// files still equal the framework bit for bit wherever no convolution is fused. Not the algebraic
// simplification jit runs (x + 0 rewritten to x changes -0), nor CSE, which a file exported from
// a traced graph has had already.
graph::PassOptions lite_passes() {
  graph::PassOptions o;
  o.simplify = o.cse = false;
  o.inference = true;
  o.max_folded_bytes = int64_t{64} << 20;
  o.fold_copies_views = false;
  o.seal_constants = true;  // the file's weights are Lite's alone (NOTE [Sealed constants])
  return o;
}

}  // namespace

Executor::Executor(ir::Graph graph, Device device, std::string label)
    : graph_(std::move(graph)), device_(device), label_(std::move(label)) {
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (!graph_.nodes[n].subgraphs.empty() && graph_.nodes[n].def->id != OpId::k_while_loop &&
        graph_.nodes[n].def->id != OpId::k_if_else)
      throw Error(ErrorCode::kUnsupported, label_ + ": node " + std::to_string(n) + " (" + graph_.nodes[n].def->name +
                                               ") has subgraphs, which Lite runs for while_loop and if_else only; "
                                               "run the model in the framework");
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (graph_.nodes[n].def->facts.collective)
      throw Error(ErrorCode::kUnsupported, label_ + ": node " + std::to_string(n) + " (" + graph_.nodes[n].def->name +
                                               ") is a collective across processes (NOTE [Collective ops]); Lite "
                                               "runs one process: export the network without its "
                                               "DistributedDataParallel wrapper or dist:: calls");
  weights_.resize(graph_.values.size());
  for (size_t i = 0; i < graph_.values.size(); ++i) {
    ir::Value& v = graph_.values[i];
    if (v.data.defined()) weights_[i] = device == Device::cpu() ? v.data : v.data.to(device);
    v.data = Tensor();  // weights_ holds them (on the device)
  }
  for (uint32_t id : graph_.inputs)
    for (const ir::Dim& d : graph_.values[id].dims) symbolic_ = symbolic_ || d.symbolic();
  const char* p = std::getenv("SPORE_LITE_PROFILE");
  profile_level_ = p ? std::atoi(p) : 0;
  const char* clock = std::getenv("SPORE_LITE_PROFILE_CLOCK");
  profile_wall_ = clock && std::string(clock) == "wall";
}

Executor::~Executor() {
  if (profile_level_ > 0 && profile_runs_ > 0) print_profile();
}

void Executor::plan(const std::vector<Shape>& input_shapes) {
  if (exe_) {
    kept_.push_back({planned_shapes_, std::move(exe_), std::move(passes_)});
    if (kept_.size() > kKeptPlans) kept_.erase(kept_.begin());
  }
  for (size_t k = 0; k < kept_.size(); ++k)
    if (kept_[k].shapes == input_shapes) {
      exe_ = std::move(kept_[k].exe);
      passes_ = std::move(kept_[k].passes);
      planned_shapes_ = input_shapes;
      kept_.erase(kept_.begin() + (long)k);
      return;
    }
  if (weights_.empty() && !graph_.values.empty())
    throw Error(ErrorCode::kInternal, label_ + ": planned again after its weights were released");
  auto g = std::make_shared<graph::Graph>(plan_graph(graph_, weights_, input_shapes, device_, label_));
  passes_.clear();
  if (fusion_enabled()) {
    passes_ = graph::run_passes(*g, lite_passes());
    g->release_unread_constants();  // a convolution's unfolded weight, a folded node's operands
  }
  exe_ = std::make_unique<graph::Executable>(g, [&] {
    std::vector<Tensor> examples;
    for (size_t i = 0; i < input_shapes.size(); ++i)
      examples.push_back(Tensor::empty(input_shapes[i], graph_.values[graph_.inputs[i]].dtype, device_));
    return examples;
  }(), std::vector<graph::AttrBinding>{}, std::vector<std::function<void()>>{}, /*plan_memory=*/true);
  planned_shapes_ = input_shapes;
  ++plans_made_;
  profile_runs_ = 0;
  // A file without symbolic input extents has one signature: the planned graph holds every weight
  // it still reads, so the file's own copies (those the passes replaced) go now.
  if (!symbolic_) weights_.clear();
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
  std::lock_guard<std::mutex> lock(run_mu_);
  std::vector<Tensor> out = exe_->run(inputs);
  // The profile leaves out a plan's first run, which also creates oneDNN's primitives (their JIT
  // compilation would be spread over the ops that happen to create one).
  if (profile_level_ > 0) {
    if (exe_->step_us().empty()) exe_->set_profile(true, profile_wall_);
    else ++profile_runs_;
  }
  return out;
}

void Executor::print_profile() const {
  const graph::Graph& g = exe_->graph();
  const std::vector<double>& us = exe_->step_us();
  // Per op: time per prediction, node count, share; the slowest first.
  std::map<std::string, std::pair<double, int>> by_op;
  double total = 0;
  for (size_t s = 0; s < g.num_nodes() && s < us.size(); ++s) {
    auto& [t, count] = by_op[g.node((int)s).def->name];
    t += us[s];
    ++count;
    total += us[s];
  }
  std::vector<std::pair<double, std::string>> rows;
  for (const auto& [name, v] : by_op) rows.emplace_back(v.first, name);
  std::sort(rows.rbegin(), rows.rend());
  std::string passes;
  for (const graph::PassStats& p : passes_)
    passes += (passes.empty() ? "" : ", ") + p.pass + " " + std::to_string(p.nodes_before) + " -> " +
              std::to_string(p.nodes_after) + " nodes (" + std::to_string(p.ops_fused) + " fused" +
             (p.constants_changed ? ", " + std::to_string(p.constants_changed) + " constants changed" : "") + ")";
  const double runs = (double)profile_runs_;
  std::fprintf(stderr, "lite profile: %s, %lld predictions after the first, %.3f ms of %s each in %zu steps (%s)\n",
               label_.c_str(), (long long)profile_runs_, total / 1e3 / runs, profile_wall_ ? "wall time" : "CPU time", g.num_nodes(), passes.c_str());
  for (const auto& [t, name] : rows)
    std::fprintf(stderr, "  %-22s %9.3f ms %5.1f %%  %d nodes\n", name.c_str(), t / 1e3 / runs,
                 100.0 * t / std::max(total, 1e-9), by_op[name].second);
  if (profile_level_ < 2) return;
  for (size_t s = 0; s < g.num_nodes() && s < us.size(); ++s) {  // SPORE_LITE_PROFILE=2: every step
    const auto outs = g.outputs((int)s);
    const std::string shape = outs.empty() ? "-" : g.value(outs[0]).meta.shape.str();
    std::fprintf(stderr, "  step %4zu %-22s -> %-22s %9.3f ms\n", s, g.node((int)s).def->name, shape.c_str(), us[s] / 1e3 / runs);
  }
}

}  // namespace spore::lite
