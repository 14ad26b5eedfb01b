// Sample 03_dataset_pipeline (chapter 5): 64 samples, batch 8: 8 batches of [8, 4]; same first batch after a rebuild with the same seed.
// Blocked until the parts it needs exist: needs the dataset pipeline (issue 3 item 4). The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs the dataset pipeline (issue 3 item 4)"); }
}  // namespace

SPORE_REGISTER_PROBE({"03_dataset_pipeline", "sample", "64 samples, batch 8: 8 batches of [8, 4]; same first batch after a rebuild with the same seed", "", &sample});
