// SpeculativeOptions' names and checks (NOTE [Speculative decoding]).
#include <string>

#include "spore/error.h"
#include "spore/nlp/generate.h"

namespace spore::nlp {

const char* speculative_type_name(SpeculativeOptions::Type t) {
  switch (t) {
    case SpeculativeOptions::Type::kNone: return "none";
    case SpeculativeOptions::Type::kNgram: return "ngram";
    case SpeculativeOptions::Type::kDraft: return "draft";
  }
  return "?";
}

SpeculativeOptions::Type parse_speculative_type(const std::string& name) {
  if (name == "none") return SpeculativeOptions::Type::kNone;
  if (name == "ngram" || name == "ngram-simple") return SpeculativeOptions::Type::kNgram;
  if (name == "draft" || name == "draft-simple") return SpeculativeOptions::Type::kDraft;
  throw Error(ErrorCode::kValue, "speculative decoding type '" + name +
                                     "' is not known; use \"none\", \"ngram\" (prompt lookup) or \"draft\" (a draft model)");
}

void validate_speculative(const SpeculativeOptions& o) {
  if (o.draft_max < 1 || o.draft_max > 64)
    throw Error(ErrorCode::kValue, "speculative decoding: draft_max is " + std::to_string(o.draft_max) +
                                       "; give 1 to 64 tokens drafted per step");
  if (o.ngram_min < 1 || o.ngram_max < o.ngram_min || o.ngram_max > 16)
    throw Error(ErrorCode::kValue, "speculative decoding: n-gram sizes " + std::to_string(o.ngram_min) + ".." +
                                       std::to_string(o.ngram_max) + " are not 1 <= ngram_min <= ngram_max <= 16");
}

}  // namespace spore::nlp
