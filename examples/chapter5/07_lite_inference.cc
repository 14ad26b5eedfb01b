// Sample 07_lite_inference (chapter 5): Lite inference on the CPU target and the accelerator target, failure layer named.
// Blocked until the parts it needs exist: needs the spore-lite runtime and an exported IR (the Lite issue); the accelerator target also needs a CUDA build. The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs the spore-lite runtime and an exported IR (the Lite issue); the accelerator target also needs a CUDA build"); }
}  // namespace

SPORE_REGISTER_PROBE({"07_lite_inference", "sample", "Lite inference on the CPU target and the accelerator target, failure layer named", "", &sample});
