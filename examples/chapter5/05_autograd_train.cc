// Sample 05_autograd_train (chapter 5): linear regression trained with value_and_grad and Adam: start and end loss, time.
// Blocked until the parts it needs exist: needs the ops' backward rules (the autograd tape, optimizers and Cells exist; issue 3). The issue that builds them replaces this body
// with the real sample; the harness needs no change.
#include "spore/probe.h"

namespace {
void sample(spore::probe::ProbeContext& ctx) { ctx.block("needs the ops' backward rules (the autograd tape, optimizers and Cells exist; issue 3)"); }
}  // namespace

SPORE_REGISTER_PROBE({"05_autograd_train", "sample", "linear regression trained with value_and_grad and Adam: start and end loss, time", "", &sample});
