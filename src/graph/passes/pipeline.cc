// The pass pipeline (NOTE [Graph passes]): simplify, fold, CSE, DCE, fuse, DCE, in that order;
// with PassOptions::inference, the inference rewrites around folding (NOTE [Inference passes]):
// fused groups after convolutions expanded before it (their constant operands then fold), conv
// fusion and GELU after it (they need the folded per-channel constants), all before elementwise
// fusion, which would otherwise take the chains they absorb; after it, the convolutions' elementwise
// tails become their epilogues. With PassOptions::seal_constants (Lite), the constants are
// made read-only right after folding (NOTE [Sealed constants]).
// Simplification first exposes constants (x*1 of a folded fill) and shorter chains; folding then
// turns constant subtrees into values; CSE merges what the first two made equal; DCE drops what
// they left unread; fusion runs on the cleaned graph, and a last DCE removes what fusion
// orphaned. With validation on (tests, SPORE_GRAPH_VALIDATE=1, or debug builds) the graph is
// checked after every pass, so a broken rewrite is reported by the pass that made it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "graph/passes/passes.h"

namespace spore::graph {

namespace {

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::string(v) != "0";
}

}  // namespace

bool graph_verbose() {
  return env_flag("SPORE_GRAPH_VERBOSE");
}

void print_pass_stats(const std::vector<PassStats>& stats, std::FILE* out) {
  for (const PassStats& s : stats)
    std::fprintf(out, "[graph] %-8s nodes %d -> %d (removed %d), fused %d ops, %lld bytes saved, %d constants changed\n",
                 s.pass.c_str(), s.nodes_before, s.nodes_after, s.nodes_removed, s.ops_fused,
                 (long long)s.bytes_saved, s.constants_changed);
}

std::vector<PassStats> run_passes(Graph& g, const PassOptions& options) {
#ifdef NDEBUG
  const bool validate = options.validate || env_flag("SPORE_GRAPH_VALIDATE");
#else
  const bool validate = true;
#endif
  std::vector<PassStats> stats;
  auto run = [&](bool enabled, auto pass) {
    if (!enabled) return;
    stats.push_back(pass(g));
    if (validate) g.validate();
  };
  if (validate) g.validate();
  run(options.simplify, &simplify_algebra);
  run(options.inference, &expand_fused_after_convolutions);
  run(options.fold_constants,
      [&](Graph& graph) { return fold_constants(graph, options.max_folded_bytes, options.fold_copies_views); });
  run(options.seal_constants, &seal_constants);  // the folded results too; before the passes that copy constants
  run(options.inference, &fuse_convolutions);
  run(options.inference, &substitute_gelu);
  run(options.inference, &flush_subnormal_constants);  // after conv fusion made its weights
  run(options.inference, &pad_matmul_weight_pitch);    // after the flush, which copies compactly
  run(options.cse, &eliminate_common_subexpressions);
  run(options.dce, &eliminate_dead_code);
  run(options.fuse, [&](Graph& graph) { return fuse_elementwise(graph, options.min_fusion_elements); });
  run(options.inference, &fuse_conv_epilogues);  // takes the tails fusion made (or single ops)
  run(options.dce && options.fuse, &eliminate_dead_code);
  if (options.verbose || graph_verbose()) print_pass_stats(stats, stderr);
  return stats;
}

}  // namespace spore::graph
