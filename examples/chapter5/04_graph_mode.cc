// Sample 04_graph_mode (chapter 5): one function in eager and graph mode gives 13.0 both ways.
// Blocked until the parts it needs exist: needs graph mode (jit: trace, passes, executor), not built yet. The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs graph mode (jit: trace, passes, executor), not built yet"); }
}  // namespace

SPORE_REGISTER_PROBE({"04_graph_mode", "sample", "one function in eager and graph mode gives 13.0 both ways", "", &sample});
