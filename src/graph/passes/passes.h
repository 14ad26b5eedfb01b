// The graph passes (NOTE [Graph passes] in docs/design.md): each rewrites a Graph in place and
// says what it did. One file per pass in this folder; run_passes is the pipeline jit uses.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "spore/graph.h"

namespace spore::graph {

struct PassOptions {
  bool dce = true, cse = true, fold_constants = true, simplify = true, fuse = true;
  bool validate = false;  // Graph::validate after each pass (always on in debug builds)
  bool verbose = false;   // print each pass's statistics to stderr (also SPORE_GRAPH_VERBOSE=1)
  // Elementwise ops whose output has fewer elements stay unfused (NOTE [Elementwise fusion]):
  // below two of the fused kernel's blocks, its set-up costs more than the memory traffic it
  // saves (the chapter's regression step, 64x4 tensors, ran 1.5x slower fused).
  int64_t min_fusion_elements = 4096;
  // Constant folding (NOTE [Graph passes]): results over this many bytes stay nodes. jit keeps a
  // graph's folded constants small; Lite folds up to 64 MiB (a BatchNorm's scale, an ONNX shape
  // computation, a weight's layout change), since it runs one model many times.
  int64_t max_folded_bytes = int64_t{1} << 20;
  // A folded view (reshape, permute of a constant) is copied so that the constant owns its
  // storage; false keeps the view as the op made it, with its strides, so the kernel reading it
  // takes the path it takes eagerly (Lite: bit-equal to the file run as written).
  bool fold_copies_views = true;
  // The inference rewrites (NOTE [Inference passes]): fused groups reading a convolution put
  // back as ops, BatchNorm and bias folded into fused_conv2d with its activation's clamp, the
  // erf formula of GELU made gelu, subnormal float32 constants flushed to zero (NOTE [Subnormal
  // weights]). Inference only: fused_conv2d has no backward rule. Lite runs them; jit when the
  // caller froze the captured tensors (JitOptions::freeze).
  bool inference = false;
  // Constants no node writes made read-only after folding (NOTE [Sealed constants]): for a graph
  // that owns its constants (Lite's, loaded from a file), never for one that holds the caller's
  // tensors (jit's frozen weights stay the user's to change).
  bool seal_constants = false;
};

// Each pass: rewrites `g` (which validates before and after) and returns its statistics.
PassStats eliminate_dead_code(Graph& g);
PassStats eliminate_common_subexpressions(Graph& g);
PassStats fold_constants(Graph& g, int64_t max_bytes = int64_t{1} << 20, bool copy_views = true);
PassStats simplify_algebra(Graph& g);
// Groups whose output has fewer than `min_elements` elements are left alone.
PassStats fuse_elementwise(Graph& g, int64_t min_elements = 0);
// The inference rewrites (NOTE [Inference passes]), one file each.
PassStats expand_fused_after_convolutions(Graph& g);
PassStats fuse_convolutions(Graph& g);
PassStats substitute_gelu(Graph& g);
PassStats flush_subnormal_constants(Graph& g);
PassStats seal_constants(Graph& g);
PassStats pad_matmul_weight_pitch(Graph& g);
// After elementwise fusion: a fused_conv2d's elementwise tail as its epilogue (NOTE [Convolution
// epilogues]).
PassStats fuse_conv_epilogues(Graph& g);

// The pipeline, in a fixed order (simplify, [expand], fold, [conv, gelu, subnormal, pitch], CSE, DCE, fuse,
// [epilogue], DCE;
// the bracketed ones with `inference`); one PassStats per pass that ran.
std::vector<PassStats> run_passes(Graph& g, const PassOptions& options = {});

// SPORE_GRAPH_VERBOSE=1 (non-empty, not "0"): run_passes prints its statistics.
bool graph_verbose();
// One line per pass: name, nodes before -> after, ops fused, bytes saved.
void print_pass_stats(const std::vector<PassStats>& stats, std::FILE* out);

}  // namespace spore::graph
