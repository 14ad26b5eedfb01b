// Sample 02_cell_network (chapter 5): explicit-float16 two-layer network, Dense float32, Dense-ReLU-Dense, to_float(float16) stable across processes.
// Blocked until the parts it needs exist: needs nn Cells (Dense, ReLU, SequentialCell) and to_float mixed precision (issue 3). The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs nn Cells (Dense, ReLU, SequentialCell) and to_float mixed precision (issue 3)"); }
}  // namespace

SPORE_REGISTER_PROBE({"02_cell_network", "sample", "explicit-float16 two-layer network, Dense float32, Dense-ReLU-Dense, to_float(float16) stable across processes", "", &sample});
