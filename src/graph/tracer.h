// The tracer (NOTE [Tracing] in docs/design.md): runs a function eagerly on real inputs while a
// DispatchObserver records every op it dispatches, then numbers the tensors into a Graph.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "spore/graph.h"
#include "spore/jit.h"

namespace spore::graph {

// An op whose attributes come from host state at every run (NOTE [Host state in traces]).
struct AttrBinding {
  int node = -1;  // in the traced graph
  std::function<Attrs()> refresh;
};

struct Trace {
  Graph graph;
  std::vector<Tensor> outputs;  // the eager run's results: the first call's answer
  std::vector<AttrBinding> bindings;
  std::vector<std::function<void()>> effects;
};

// NOTE [Control flow]: what while_loop needs from the tracer of the function that calls it.
// trace_subgraph traces fn(inputs) into a graph of its own while the enclosing trace (and any
// tape) records nothing; run_untraced runs fn eagerly the same way, with host reads allowed (the
// loop's first, eager run reads its condition); record_with_subgraphs tells the observers about
// a node that ran outside dispatch, and the enclosing tracer keeps `subgraphs` with its node.
Trace trace_subgraph(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                     const std::vector<Tensor>& inputs, const std::string& name);
void run_untraced(const std::function<void()>& fn);
void record_with_subgraphs(const OpDef& def, std::span<const Tensor> inputs, const Attrs& attrs,
                           std::span<const Tensor> outputs, std::vector<std::shared_ptr<const Graph>> subgraphs);

// Traces fn(inputs). Errors (kValue, naming `name` and the last op traced): a host read of a
// tensor's value, an undefined result.
Trace trace(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
            const std::vector<Tensor>& inputs, const std::string& name);

}  // namespace spore::graph
