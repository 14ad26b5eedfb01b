// libFuzzer target: `spore finetune`'s data reader (src/nlp/finetune/jsonl_data.cc, NOTE
// [Fine-tuning data]): JSONL text -> records -> tokenised examples with loss masks, through a
// real byte-level BPE tokenizer and ChatML template (tests/fixtures/convert/llama).
//
// Contract checked: any input either parses or throws spore::Error (never nlohmann's own
// exceptions, a crash or a sanitizer report); every example has one target flag per token, none
// on its first token, at least one target, and no more tokens than the limit asked for.
#include <cstddef>
#include <cstdint>
#include <string>

#include "spore/error.h"
#include "spore/nlp/chat_template.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/tokenizer.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
const std::string kDir = std::string(SPORE_SOURCE_DIR) + "/tests/fixtures/convert/llama/";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  static const nlp::Tokenizer tok = nlp::Tokenizer::from_file(kDir + "tokenizer.json");
  static const nlp::ChatTemplate tpl = nlp::ChatTemplate::load(kDir + "tokenizer_config.json");
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const std::vector<nlp::DataRecord> records = nlp::parse_jsonl(text, "fuzz.jsonl");
    require(!records.empty());
    nlp::DataOptions o;
    o.max_tokens = 64;
    nlp::DataReport rep;
    for (const nlp::TrainExample& ex : nlp::tokenize_records(records, tok, &tpl, o, "fuzz.jsonl", rep)) {
      require(ex.ids.size() == ex.target.size() && ex.ids.size() >= 2 && ex.ids.size() <= 64);
      require(ex.target[0] == 0);
      int targets = 0;
      for (uint8_t t : ex.target) targets += t;
      require(targets > 0);
    }
  } catch (const Error&) {
  }
  return 0;
}
