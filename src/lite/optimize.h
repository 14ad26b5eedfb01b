// Lite's load-time rewriting of a graph (NOTE [Lite executor]): constant subgraphs folded, each
// float32 convolution merged with the per-channel affine ops after it (a BatchNorm in inference
// mode) and its ReLU / ReLU6 / Clip into the registry op fused_conv2d, and erf-written GELUs
// into the registry's gelu.
#pragma once
#include <string>

#include "spore/ir.h"

namespace spore::lite {

struct OptimizeStats {
  int expanded = 0;     // fused_elementwise nodes put back as their ops (so a conv can absorb them)
  int folded = 0;       // nodes computed at load (all inputs constant)
  int fused_convs = 0;  // conv2d nodes replaced by fused_conv2d
  int absorbed = 0;     // elementwise nodes merged into those
  int gelus = 0;        // 0.5 * x * (1 + erf(x / sqrt 2)) chains replaced by gelu
  std::string str() const;
};

// False when SPORE_LITE_FUSION=0: the graph runs as the file wrote it (tests compare the two).
bool fusion_enabled();

// Rewrites `g` in place; every rewrite keeps the graph's inputs, outputs and their values.
OptimizeStats optimize(ir::Graph& g);

}  // namespace spore::lite
