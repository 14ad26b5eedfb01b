// jit: the signature cache, trace -> passes -> memory plan -> executor (NOTE [jit cache]).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "graph/executor.h"
#include "graph/passes/passes.h"
#include "graph/tracer.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/jit.h"

namespace spore {

namespace {

struct InputSig {
  TensorMeta meta;
  Device device;
  // The first input with the same TensorImpl (its own index when none): a graph traced with one
  // tensor passed twice reads both positions as one value, so aliasing is part of the signature.
  uint32_t alias = 0;
};

uint32_t alias_of(const std::vector<Tensor>& inputs, size_t i) {
  for (size_t j = 0; j < i; ++j)
    if (inputs[j].impl() == inputs[i].impl()) return (uint32_t)j;
  return (uint32_t)i;
}

struct Entry {
  std::vector<InputSig> sig;
  StaticArgs statics;
  std::unique_ptr<graph::Executable> exe;
  uint64_t used = 0;
};

std::string describe_signature(std::span<const InputSig> sig, const StaticArgs& statics) {
  std::string s;
  for (const InputSig& i : sig) {
    if (!s.empty()) s += ", ";
    s += dtype_name(i.meta.dtype);
    s += i.meta.shape.str() + " " + i.device.str();
    if (&i - sig.data() != (ptrdiff_t)i.alias) s += " (= input " + std::to_string(i.alias) + ")";
  }
  if (s.empty()) s = "(no tensors)";
  if (!statics.empty()) {
    s += " |";
    for (const AttrValue& a : statics) {
      s += " ";
      std::visit(
          [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
              s += "[";
              for (size_t k = 0; k < v.size(); ++k) {
                if (k) s += ",";
                s += std::to_string(v[k]);
              }
              s += "]";
            } else if constexpr (std::is_same_v<T, DType>) s += dtype_name(v);
            else if constexpr (std::is_same_v<T, std::string>) s += v;
            else s += std::to_string(v);
          },
          a);
    }
  }
  return s;
}

bool matches(const Entry& e, const std::vector<Tensor>& inputs, const StaticArgs& statics) {
  if (e.sig.size() != inputs.size() || e.statics.size() != statics.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || t.dtype() != e.sig[i].meta.dtype || t.shape() != e.sig[i].meta.shape ||
        t.device() != e.sig[i].device || alias_of(inputs, i) != e.sig[i].alias)
      return false;
  }
  for (size_t i = 0; i < statics.size(); ++i)
    if (!(statics[i] == e.statics[i])) return false;
  return true;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// SPORE_DUMP_GRAPHS=DIR: each compiled graph as text and DOT, before and after the passes.
void dump_to_env_dir(const graph::Graph& g, const std::string& name, int index, const char* stage) {
  const char* dir = std::getenv("SPORE_DUMP_GRAPHS");
  if (!dir || !*dir) return;
  std::filesystem::create_directories(dir);
  std::string stem = name + "-" + std::to_string(index) + "-" + stage;
  for (char& c : stem)
    if (!std::isalnum((unsigned char)c) && c != '-' && c != '_') c = '_';
  const std::string text = graph::dump(g), dot = graph::dump_dot(g);
  atomic_write_file(std::filesystem::path(dir) / (stem + ".txt"), std::span((const uint8_t*)text.data(), text.size()));
  atomic_write_file(std::filesystem::path(dir) / (stem + ".dot"), std::span((const uint8_t*)dot.data(), dot.size()));
}

}  // namespace

struct JitFunction::State {
  TensorsStaticFn fn;
  JitOptions options;
  JitStats stats;
  std::vector<Entry> cache;
  uint64_t tick = 0;
  int compiled = 0;
  Entry* last = nullptr;
};

namespace {

// Where a binding's node went after the passes: the node of the same op writing the same first
// input (the bound ops are in-place updates, whose first input is the state they write).
bool remap_bindings(const graph::Graph& before, const graph::Graph& after, std::vector<graph::AttrBinding>& bindings) {
  for (graph::AttrBinding& b : bindings) {
    const Node& n = before.node(b.node);
    const graph::ValueId first = n.num_inputs ? before.inputs(b.node)[0] : graph::kNoValue;
    int found = -1;
    for (size_t i = 0; i < after.num_nodes() && found < 0; ++i) {
      const Node& m = after.node((int)i);
      if (m.def == n.def && m.num_inputs == n.num_inputs && (first == graph::kNoValue || after.inputs((int)i)[0] == first))
        found = (int)i;
    }
    if (found < 0) return false;
    b.node = found;
  }
  return true;
}

Entry compile(JitFunction::State& st, const std::vector<Tensor>& inputs, const StaticArgs& statics,
              std::vector<Tensor>& results) {
  Entry e;
  for (size_t i = 0; i < inputs.size(); ++i) e.sig.push_back({value_meta(inputs[i]), inputs[i].device(), alias_of(inputs, i)});
  e.statics = statics;
  const std::string& name = st.options.name;
  auto t0 = std::chrono::steady_clock::now();
  graph::Trace tr = graph::trace([&](const std::vector<Tensor>& in) { return st.fn(in, statics); }, inputs, name);
  st.stats.last_trace_ms = ms_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  const int index = st.compiled++;
  dump_to_env_dir(tr.graph, name, index, "before");
  st.stats.nodes_traced = (int)tr.graph.num_nodes();
  if (st.options.freeze) tr.graph.freeze_captured();
  auto g = std::make_shared<graph::Graph>(tr.graph);
  if (st.options.optimize) {
    graph::PassOptions options;
    options.inference = st.options.freeze;
    std::vector<graph::PassStats> passes = graph::run_passes(*g, options);
    g->validate();
    std::vector<graph::AttrBinding> moved = tr.bindings;
    st.stats.last_passes.clear();
    if (remap_bindings(tr.graph, *g, moved)) {
      tr.bindings = std::move(moved);
      st.stats.last_passes = passes;
    } else {
      // A pass merged or rewrote a node whose attributes come from host state: run unoptimised.
      g = std::make_shared<graph::Graph>(tr.graph);
    }
    if (st.options.verbose) {
      std::fprintf(stderr, "%s:\n", name.c_str());
      graph::print_pass_stats(passes, stderr);
    }
  } else {
    st.stats.last_passes.clear();
  }
  dump_to_env_dir(*g, name, index, "after");
  e.exe = std::make_unique<graph::Executable>(g, inputs, std::move(tr.bindings), std::move(tr.effects),
                                              st.options.plan_memory);
  st.stats.last_compile_ms = ms_since(t1);
  st.stats.nodes_compiled = (int)g->num_nodes();
  st.stats.planned_peak_bytes = e.exe->memory_plan().planned_bytes;
  st.stats.unplanned_peak_bytes = e.exe->memory_plan().unplanned_peak;
  st.stats.in_place = e.exe->memory_plan().in_place;
  results = std::move(tr.outputs);
  return e;
}

}  // namespace

std::vector<Tensor> JitFunction::operator()(const std::vector<Tensor>& inputs, const StaticArgs& statics) {
  State& st = *state_;
  // Inside another trace: run eagerly, so the outer tracer records these ops in its own graph.
  if (graph::is_tracing()) return st.fn(inputs, statics);
  ++st.stats.calls;
  Entry* hit = nullptr;
  if (st.last && matches(*st.last, inputs, statics)) hit = st.last;
  for (size_t i = 0; !hit && i < st.cache.size(); ++i)
    if (matches(st.cache[i], inputs, statics)) hit = &st.cache[i];
  if (hit) {
    ++st.stats.hits;
    hit->used = ++st.tick;
    st.last = hit;
    return hit->exe->run(inputs);
  }
  ++st.stats.misses;
  if (!st.options.retrace && !st.cache.empty()) {
    std::vector<InputSig> given;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) throw Error(ErrorCode::kValue, st.options.name + ": an input is an undefined tensor");
      given.push_back({value_meta(inputs[i]), inputs[i].device(), alias_of(inputs, i)});
    }
    throw Error(ErrorCode::kValue, st.options.name + ": compiled for (" +
                                       describe_signature(st.cache.front().sig, st.cache.front().statics) +
                                       ") but called with (" + describe_signature(given, statics) +
                                       "); pass inputs of the compiled signature, or allow re-tracing (JitOptions::retrace)");
  }
  std::vector<Tensor> results;
  Entry e = compile(st, inputs, statics, results);
  e.used = ++st.tick;
  if ((int)st.cache.size() >= std::max(1, st.options.cache_size)) {
    auto lru = std::min_element(st.cache.begin(), st.cache.end(),
                                [](const Entry& a, const Entry& b) { return a.used < b.used; });
    st.cache.erase(lru);
    ++st.stats.evictions;
  }
  st.cache.push_back(std::move(e));
  st.last = &st.cache.back();
  return results;
}

Tensor JitFunction::call1(const std::vector<Tensor>& inputs, const StaticArgs& statics) {
  std::vector<Tensor> r = (*this)(inputs, statics);
  if (r.size() != 1)
    throw Error(ErrorCode::kValue, state_->options.name + ": call1 on a function with " + std::to_string(r.size()) +
                                       " results; call it with operator() instead");
  return r[0];
}

const JitStats& JitFunction::stats() const { return state_->stats; }

const graph::Graph* JitFunction::last_graph() const {
  return state_->last ? &state_->last->exe->graph() : nullptr;
}

std::string JitFunction::last_signature() const {
  return state_->last ? describe_signature(state_->last->sig, state_->last->statics) : std::string();
}

JitFunction jit(TensorsStaticFn fn, JitOptions options) {
  if (!fn) throw Error(ErrorCode::kValue, "jit: the function is empty");
  auto st = std::make_shared<JitFunction::State>();
  st->fn = std::move(fn);
  st->options = std::move(options);
  return JitFunction(std::move(st));
}

JitFunction jit(TensorsFn fn, JitOptions options) {
  if (!fn) throw Error(ErrorCode::kValue, "jit: the function is empty");
  return jit(TensorsStaticFn([fn = std::move(fn)](const std::vector<Tensor>& in, const StaticArgs&) { return fn(in); }),
             std::move(options));
}

JitFunction jit(TensorFn fn, JitOptions options) {
  if (!fn) throw Error(ErrorCode::kValue, "jit: the function is empty");
  return jit(TensorsStaticFn([fn = std::move(fn)](const std::vector<Tensor>& in, const StaticArgs&) {
               return std::vector<Tensor>{fn(in)};
             }),
             std::move(options));
}

}  // namespace spore
