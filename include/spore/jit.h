// Graph mode: jit compiles a function of tensors (or a Cell) into a graph of registry ops and
// runs it as a whole (NOTE [Graphs], [Tracing], [Graph executor], [jit cache] in docs/design.md).
//
//   auto f = spore::jit([](const std::vector<Tensor>& in) { return add(mul(in[0], in[1]), in[2]); });
//   Tensor y = f({a, b, c})[0];   // first call: traced eagerly (its outputs are the answer)
//   Tensor z = f({a, b, c})[0];   // later calls with the same signature: the compiled graph
//
// The first call with an input signature (shapes, dtypes, devices of the tensors and the values
// of the static arguments) runs the function eagerly while a tracer records every op it
// dispatches, optimises the graph (src/graph/passes/), plans its memory and caches it; later calls
// with that signature run the graph, a new signature traces again. Tensors the function reads but
// was not given (a Parameter's value, a closure's tensor) are bound by reference, so an
// optimizer's in-place update is seen by the next call. Reading a tensor's value on the host while
// tracing is an error (the graph would bake in one value).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "spore/graph.h"
#include "spore/op_registry.h"
#include "spore/tensor_fn.h"

namespace spore {

namespace nn {
class Cell;
}

// Values of non-tensor arguments that select a graph (part of the cache key), passed to the
// function as they are.
using StaticArgs = std::vector<AttrValue>;
using TensorsStaticFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&, const StaticArgs&)>;

struct JitOptions {
  std::string name = "jit";  // in errors and dumped graph file names
  int cache_size = 8;        // compiled signatures kept (least recently used dropped first)
  bool retrace = true;       // false: a call with a new signature fails naming both signatures
  bool optimize = true;      // run the graph passes (run_passes)
  bool plan_memory = true;   // reuse buffers by liveness (src/graph/passes/memory_plan.h)
  bool verbose = false;      // print each compiled graph's pass statistics to stderr
  // Inference: the captured tensors (a Cell's parameters, closures' tensors) are read once, at
  // the trace, as constants, and the inference passes run (NOTE [Inference passes]: BatchNorm
  // folded into a convolution with its bias and activation as fused_conv2d, GELU's erf formula
  // made gelu). Later in-place updates of those tensors are not seen, and the compiled graph has
  // no gradient through a fused convolution: for a model in eval mode that only predicts.
  bool freeze = false;
};

// What a jitted function did, for tests and benchmarks.
struct JitStats {
  int64_t calls = 0, hits = 0, misses = 0, evictions = 0;
  double last_trace_ms = 0, last_compile_ms = 0;  // tracing (the eager run); passes + planning
  int nodes_traced = 0, nodes_compiled = 0;       // of the last compiled graph
  int64_t planned_peak_bytes = 0;                 // of the last compiled graph's intermediates
  int64_t unplanned_peak_bytes = 0;               // the same values, each in a buffer of its own while live
  int in_place = 0;                               // outputs written over an input's buffer
  std::vector<graph::PassStats> last_passes;      // of the last compile, one per pass run (empty
                                                  // when JitOptions::optimize is off)
};

// Copies share one cache. One thread at a time may call it; the Cells, Parameters, optimizers
// and closures the traced function used must outlive it (captured tensors are bound by reference).
class JitFunction {
 public:
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const StaticArgs& statics = {});
  // The single result (kValue when the function has several).
  Tensor call1(const std::vector<Tensor>& inputs, const StaticArgs& statics = {});
  const JitStats& stats() const;
  // The graph compiled for the most recent call (after the passes); nullptr before the first.
  const graph::Graph* last_graph() const;
  // The signature of the most recent call, as "float32[2, 3] cpu, int64[4] cpu | 2.0".
  std::string last_signature() const;

  struct State;
  explicit JitFunction(std::shared_ptr<State> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<State> state_;
};

JitFunction jit(TensorsFn fn, JitOptions options = {});
JitFunction jit(TensorFn fn, JitOptions options = {});
JitFunction jit(TensorsStaticFn fn, JitOptions options = {});
// A Cell's forward (its operator(), casts included); parameters are bound by reference. Defined
// on the framework side (src/nn/cell_jit.cc): the graph library below nn only declares it
// (NOTE [Graph library layering]).
JitFunction jit(nn::Cell& cell, JitOptions options = {});

namespace graph {

// True while this thread traces a function for jit.
bool is_tracing();

// NOTE [Host state in traces]: code that keeps state on the host across calls and hands it to
// an op as attributes (an optimizer's step count and learning rate) registers, while traced,
// how to recompute them: `refresh` gives the attributes of the next op this thread dispatches at
// every later run of the compiled graph; `effect` runs after every later run (advancing the
// step count the traced call advanced). Both do nothing when not tracing.
void bind_next_op_attrs(std::function<Attrs()> refresh);
void on_each_run(std::function<void()> effect);

// One node a line: id, op, attributes, input ids, output ids with shapes and dtypes; then the
// graph's inputs, captured tensors and outputs.
std::string dump(const Graph& g);
// Graphviz DOT of the same graph.
std::string dump_dot(const Graph& g);

}  // namespace graph
}  // namespace spore
