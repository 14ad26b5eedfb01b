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

// Traces fn(inputs). Errors (kValue, naming `name` and the last op traced): a host read of a
// tensor's value, an undefined result.
Trace trace(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
            const std::vector<Tensor>& inputs, const std::string& name);

}  // namespace spore::graph
