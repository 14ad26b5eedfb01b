// Sample 06_checkpoint_ir (chapter 5): checkpoint and IR bytes and SHA-256, reload max abs error 0.0.
// Blocked until the parts it needs exist: needs save_checkpoint over the safetensors writer (issue 3 item 5) and IR export (the IR issue). The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs save_checkpoint over the safetensors writer (issue 3 item 5) and IR export (the IR issue)"); }
}  // namespace

SPORE_REGISTER_PROBE({"06_checkpoint_ir", "sample", "checkpoint and IR bytes and SHA-256, reload max abs error 0.0", "", &sample});
