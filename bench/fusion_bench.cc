// Elementwise fusion benchmark (NOTE [Elementwise fusion]); medians of interleaved rounds, so
// every contender sees the same machine conditions.
//  * `a * b + c` over 64 Mi float32 as one fused_elementwise node (what the graph passes make of
//    the two-node graph) against: the STREAM triad a[i] = b[i] + s * c[i] (3 arrays) and the same
//    expression as a plain loop (4 arrays), both in this program on the same threads, and the two
//    eager ops (6 arrays). Bandwidth counts the arrays each really moves; the target is fused >=
//    0.9 of the triad's bandwidth.
//  * gelu(x * w + b) over [8192, 4096] float32 (b a broadcast row): fused node against the three
//    eager ops.
// Run: build/release/bench/fusion_bench [rounds] [--no-chain]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/thread_pool.h"
#include "graph/passes/passes.h"
#include "spore/context.h"
#include "spore/graph.h"
#include "spore/ops.h"

namespace spore {
namespace {

double seconds(const std::function<void()>& fn) {
  auto t0 = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs a graph of registry nodes by dispatch (the executor's job, written elsewhere; this is
// enough for one fused node).
std::vector<Tensor> run_graph(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> env(g.num_values());
  for (size_t v = 0; v < g.num_values(); ++v) env[v] = g.value((graph::ValueId)v).tensor;
  for (size_t i = 0; i < inputs.size(); ++i) env[g.graph_inputs()[i]] = inputs[i];
  std::vector<Tensor> args;
  for (int i = 0; i < (int)g.num_nodes(); ++i) {
    args.clear();
    for (graph::ValueId v : g.inputs(i)) args.push_back(env[v]);
    TensorList r = dispatch(g.node(i).op(), args, g.node(i).attrs);
    for (uint32_t o = 0; o < g.node(i).num_outputs; ++o) env[g.outputs(i)[o]] = r[(int)o];
  }
  std::vector<Tensor> out;
  for (graph::ValueId v : g.graph_outputs()) out.push_back(env[v]);
  return out;
}

// The graph of fn over `inputs`' metadata, built node by node and optimised by the pipeline.
graph::Graph optimised(const std::vector<Tensor>& inputs,
                       const std::vector<std::pair<OpId, std::vector<int>>>& nodes) {
  graph::Graph g;
  std::vector<graph::ValueId> ids;
  std::vector<Tensor> examples;
  for (const Tensor& t : inputs) {
    ids.push_back(g.add_input(value_meta(t)));
    examples.push_back(t.numel() > 16 ? Tensor::empty(t.shape(), t.dtype()) : t);
  }
  for (const auto& [op, refs] : nodes) {
    std::vector<Tensor> args;
    std::vector<graph::ValueId> in;
    for (int r : refs) {
      args.push_back(examples[r]);
      in.push_back(ids[r]);
    }
    Tensor out = dispatch1(op, args);
    TensorMeta meta[] = {value_meta(out)};
    int n = g.add_node(op_def(op), {}, in, meta);
    ids.push_back(g.outputs(n)[0]);
    examples.push_back(out);
  }
  g.set_outputs({ids.back()});
  graph::run_passes(g);
  return g;
}

void report(const char* name, double secs, double bytes) {
  std::printf("  %-44s %8.2f ms  %6.1f GB/s\n", name, secs * 1e3, bytes / secs / 1e9);
}

}  // namespace
}  // namespace spore

int main(int argc, char** argv) {
  using namespace spore;
  const int rounds = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  set_num_threads(2);
  const int64_t n = int64_t{64} << 20;
  Tensor a = full({n}, 1.5f), b = full({n}, 3.f), c = full({n}, 2.f), out = full({n}, 0.f);
  graph::Graph muladd = optimised({a, b, c}, {{OpId::k_mul, {0, 1}}, {OpId::k_add, {3, 2}}});
  if (muladd.num_nodes() != 1 || muladd.node(0).op() != OpId::k_fused_elementwise) {
    std::fprintf(stderr, "fusion_bench: a * b + c did not fuse into one node\n");
    return 1;
  }
  float* po = out.data<float>();
  const float *pa = a.data<float>(), *pb = b.data<float>(), *pc = c.data<float>();
  auto triad = [&] {
    cpu::parallel_for(n, 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = pb[i] + 3.f * pc[i];
    });
  };
  auto loop4 = [&] {
    cpu::parallel_for(n, 32768, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) po[i] = pa[i] * pb[i] + pc[i];
    });
  };
  auto fused = [&] { run_graph(muladd, {a, b, c}); };
  auto eager = [&] { Tensor r = a * b + c; };

  const int64_t rows = 8192, cols = 4096;
  Tensor x = full({rows, cols}, 0.25f), w = full({rows, cols}, 1.25f), bias = full({cols}, -0.5f);
  graph::Graph chain =
      optimised({x, w, bias}, {{OpId::k_mul, {0, 1}}, {OpId::k_add, {3, 2}}, {OpId::k_gelu, {4}}});
  auto chain_fused = [&] { run_graph(chain, {x, w, bias}); };
  auto chain_eager = [&] { Tensor r = gelu(x * w + bias); };

  std::vector<std::function<void()>> fns{triad, loop4, fused, eager, chain_fused, chain_eager};
  if (argc > 2 && std::string(argv[2]) == "--no-chain") fns.resize(4);
  std::vector<std::vector<double>> t(fns.size());
  for (auto& f : fns) f();  // warm up: page in every buffer
  for (int r = 0; r < rounds; ++r)
    for (size_t k = 0; k < fns.size(); ++k) t[k].push_back(seconds(fns[k]));
  std::vector<double> m;
  for (auto& v : t) m.push_back(median(v));

  const double arr = (double)n * 4;
  std::printf("fusion_bench: medians of %d interleaved rounds, 2 threads, SIMD level %s\n", rounds,
              std::getenv("SPORE_CPU_ISA") ? std::getenv("SPORE_CPU_ISA") : "(best)");
  std::printf("a * b + c, 64 Mi float32 (program: %s)\n", muladd.node(0).attrs.s(0).c_str());
  report("STREAM triad b + s*c (3 arrays)", m[0], 3 * arr);
  report("plain loop a*b + c (4 arrays)", m[1], 4 * arr);
  report("fused_elementwise (4 arrays)", m[2], 4 * arr);
  report("eager mul, add (6 arrays)", m[3], 6 * arr);
  std::printf(
      "  fused / triad bandwidth: %.2f (target >= 0.9); fused / plain loop: %.2f; eager / fused "
      "time: %.2f\n",
      (4 * arr / m[2]) / (3 * arr / m[0]), (4 * arr / m[2]) / (4 * arr / m[1]), m[3] / m[2]);
  if (fns.size() == 4) return 0;
  const double carr = (double)rows * cols * 4;
  std::printf("gelu(x * w + b), [%lld, %lld] float32, b a row (program: %s)\n", (long long)rows,
              (long long)cols, chain.node(0).attrs.s(0).c_str());
  report("fused_elementwise (3 arrays)", m[4], 3 * carr);
  report("eager mul, add, gelu (8 arrays)", m[5], 8 * carr);
  std::printf("  eager / fused time: %.2f\n", m[5] / m[4]);
  return 0;
}
