// while_loop (NOTE [Control flow] in docs/design.md): eagerly a C++ loop of ops; traced, one
// registry node whose condition and body are subgraphs traced once from the state's signature.
#include <memory>
#include <string>
#include <unordered_map>

#include "graph/tracer.h"
#include "spore/control_flow.h"
#include "spore/control_ops.h"
#include "spore/error.h"
#include "spore/jit.h"
#include "spore/node.h"

namespace spore {

void check_pred(const Tensor& pred, const char* who);  // control_flow.cc

namespace {

using graph::Graph;
using graph::ValueId;
using graph::ValueKind;

std::string sig(const Tensor& t) { return std::string(dtype_name(t.dtype())) + t.shape().str(); }

[[noreturn]] void too_many(int64_t max_iterations) {
  throw Error(ErrorCode::kValue, "while_loop: the body ran max_iterations (" + std::to_string(max_iterations) +
                                     ") times and the condition still holds; raise WhileOptions::max_iterations "
                                     "or check that the body moves the state towards the condition's end");
}

void check_next(const std::vector<Tensor>& state, const std::vector<Tensor>& next) {
  if (next.size() != state.size())
    throw Error(ErrorCode::kValue, "while_loop: body_fn returns " + std::to_string(next.size()) +
                                       " tensors for a state of " + std::to_string(state.size()));
  for (size_t i = 0; i < next.size(); ++i) {
    if (!next[i].defined())
      throw Error(ErrorCode::kValue, "while_loop: body_fn returns an undefined tensor as state " + std::to_string(i));
    if (next[i].shape() != state[i].shape() || next[i].dtype() != state[i].dtype())
      throw Error(ErrorCode::kShape, "while_loop: state " + std::to_string(i) + " changes from " + sig(state[i]) +
                                         " to " + sig(next[i]) +
                                         " in one iteration; the state keeps its shapes and dtypes (pad or cast "
                                         "inside the body, or carry the varying part outside the loop)");
  }
}

Tensor checked_condition(const BranchFn& cond_fn, const std::vector<Tensor>& state) {
  std::vector<Tensor> c = cond_fn(state);
  if (c.size() != 1)
    throw Error(ErrorCode::kValue, "while_loop: cond_fn returns " + std::to_string(c.size()) +
                                       " tensors; it must return one predicate");
  check_pred(c[0], "while_loop");
  return c[0];
}

std::vector<Tensor> run_eagerly(const BranchFn& cond_fn, const BranchFn& body_fn, std::vector<Tensor> state,
                                int64_t max_iterations) {
  for (int64_t done = 0;; ++done) {
    if (!checked_condition(cond_fn, state).item<uint8_t>()) return state;
    if (max_iterations > 0 && done >= max_iterations) too_many(max_iterations);
    std::vector<Tensor> next = body_fn(state);
    check_next(state, next);
    state = std::move(next);
  }
}

// Closure conversion: `g` was traced with the state as its inputs; every tensor it read but was
// not given (a captured value: a parameter, or a value of the enclosing trace) becomes an input
// after the state, in the order of `invariants`, so the subgraph is closed and the enclosing
// graph passes those tensors to the loop node (where they get the enclosing graph's value ids).
std::shared_ptr<const Graph> close_over(const Graph& g, const std::vector<Tensor>& invariants) {
  auto out = std::make_shared<Graph>();
  std::vector<ValueId> id(g.num_values(), graph::kNoValue);
  for (ValueId v : g.graph_inputs()) id[v] = out->add_input(g.value(v).meta, g.value(v).name);
  std::unordered_map<const TensorImpl*, ValueId> inv;
  for (const Tensor& t : invariants)
    inv.emplace(t.impl(), out->add_input(value_meta(t), "invariant" + std::to_string(inv.size())));
  for (ValueId v : g.captured()) id[v] = inv.at(g.value(v).tensor.impl());
  auto map = [&](ValueId v) {
    if (id[v] == graph::kNoValue) {
      const graph::Value& val = g.value(v);
      if (val.kind != ValueKind::kConstant)
        throw Error(ErrorCode::kInternal, "while_loop: subgraph value " + std::to_string(v) + " read before it is made");
      id[v] = out->add_constant(val.tensor, val.name);
    }
    return id[v];
  };
  std::vector<ValueId> ins;
  std::vector<TensorMeta> metas;
  for (size_t n = 0; n < g.num_nodes(); ++n) {
    ins.clear();
    metas.clear();
    for (ValueId v : g.inputs((int)n)) ins.push_back(map(v));
    for (ValueId v : g.outputs((int)n)) metas.push_back(g.value(v).meta);
    const Node& node = g.node((int)n);
    const int k = out->add_node(*node.def, node.attrs, ins, metas);
    auto outs = g.outputs((int)n);
    for (size_t o = 0; o < outs.size(); ++o) id[outs[o]] = out->outputs(k)[o];
    auto subs = g.subgraphs((int)n);
    if (!subs.empty()) out->set_subgraphs(k, {subs.begin(), subs.end()});
  }
  std::vector<ValueId> results;
  for (ValueId v : g.graph_outputs()) results.push_back(map(v));
  out->set_outputs(std::move(results));
  out->validate();
  return out;
}

// A compiled loop's body and condition must be pure functions of the state: the executor runs
// them any number of times, and host state (an optimizer's step count) cannot follow.
void check_pure(const graph::Trace& t, const char* what) {
  if (!t.bindings.empty() || !t.effects.empty())
    throw Error(ErrorCode::kUnsupported, std::string("while_loop: the ") + what +
                                             " updates host state (an optimizer step); a compiled loop runs "
                                             "pure functions of its state: step the optimizer outside the loop");
  for (const Node& n : t.graph.nodes())
    if (n.def->writes_mask != 0)
      throw Error(ErrorCode::kUnsupported, std::string("while_loop: the ") + what + " writes a tensor in place (op '" +
                                               n.def->name + "'); a compiled loop's functions must be free of side "
                                               "effects (as in JAX): return the new value as part of the state");
}

std::vector<Tensor> trace_loop(const BranchFn& cond_fn, const BranchFn& body_fn, const std::vector<Tensor>& state,
                               int64_t max_iterations) {
  const OpDef& def = op_def(OpId::k_while_loop);
  if ((int64_t)state.size() > kMaxControlResults)
    throw Error(ErrorCode::kValue, "while_loop: a compiled loop carries at most " + std::to_string(kMaxControlResults) +
                                       " state tensors, got " + std::to_string(state.size()) +
                                       "; stack related state into fewer tensors (spore::stack) or run eagerly");
  graph::Trace cond = graph::trace_subgraph(
      [&](const std::vector<Tensor>& s) { return std::vector<Tensor>{checked_condition(cond_fn, s)}; }, state,
      "while_loop condition");
  graph::Trace body = graph::trace_subgraph(
      [&](const std::vector<Tensor>& s) {
        std::vector<Tensor> next = body_fn(s);
        check_next(s, next);
        return next;
      },
      state, "while_loop body");
  check_pure(cond, "condition");
  check_pure(body, "body");
  // The tensors either function reads but was not given, in order of first read.
  std::vector<Tensor> invariants;
  std::unordered_map<const TensorImpl*, bool> seen;
  for (const graph::Trace* t : {&cond, &body})
    for (ValueId v : t->graph.captured()) {
      const Tensor& x = t->graph.value(v).tensor;
      if (seen.emplace(x.impl(), true).second) invariants.push_back(x);
    }
  std::vector<std::shared_ptr<const Graph>> subgraphs{close_over(cond.graph, invariants),
                                                      close_over(body.graph, invariants)};
  std::vector<Tensor> inputs = state;
  inputs.insert(inputs.end(), invariants.begin(), invariants.end());
  const Attrs attrs = Attrs::of(int64_t(state.size()), max_iterations);
  // The op's own checks, as planning the node runs them (NOTE [Control-flow results]: any number
  // of state tensors, not only what Inference's fixed array holds).
  (void)control_results(def, inputs, attrs);

  // This call's answer: the loop run eagerly, unseen by the trace (the node stands for it).
  // The node's outputs must be tensors of their own: a loop that ran zero times (or a body that
  // passes a state entry through) would otherwise hand back an input, and the trace would then
  // read the loop's output wherever the function reads that input afterwards.
  std::vector<Tensor> results;
  graph::run_untraced([&] {
    results = run_eagerly(cond_fn, body_fn, state, max_iterations);
    for (size_t i = 0; i < results.size(); ++i) {
      bool shared = false;
      for (const Tensor& x : inputs) shared |= same_value(x, results[i]);
      for (size_t j = 0; j < i; ++j) shared |= same_value(results[j], results[i]);
      if (shared) results[i] = results[i].clone();
    }
  });
  graph::record_with_subgraphs(def, inputs, attrs, results, std::move(subgraphs));
  return results;
}

}  // namespace

std::vector<Tensor> while_loop(const BranchFn& cond_fn, const BranchFn& body_fn, std::vector<Tensor> state,
                               const WhileOptions& options) {
  if (!cond_fn || !body_fn) throw Error(ErrorCode::kValue, "while_loop: a function is empty");
  if (state.empty()) throw Error(ErrorCode::kValue, "while_loop: the state is empty; pass at least one tensor");
  for (size_t i = 0; i < state.size(); ++i)
    if (!state[i].defined())
      throw Error(ErrorCode::kValue, "while_loop: state " + std::to_string(i) + " is an undefined tensor");
  if (options.max_iterations < 0)
    throw Error(ErrorCode::kValue, "while_loop: max_iterations is " + std::to_string(options.max_iterations) +
                                       "; use 0 for no bound");
  if (graph::is_tracing()) return trace_loop(cond_fn, body_fn, state, options.max_iterations);
  return run_eagerly(cond_fn, body_fn, std::move(state), options.max_iterations);
}

}  // namespace spore
