// The one nesting bound for JSON that comes from outside (NOTE [Hostile JSON] in docs/design.md):
// reports, probe results, every body `spore serve` parses and the chat template's inputs.
#pragma once

namespace spore {

// Objects and arrays inside each other, counting the outermost one. Deeper documents are refused
// while parsing, before anything recursive (copies, dump(), schema checks, template values) walks
// them. No report, OpenAI request or tool schema comes near it; a 100,000-deep array used to
// overflow a server thread's stack.
inline constexpr int kMaxJsonDepth = 64;

}  // namespace spore
