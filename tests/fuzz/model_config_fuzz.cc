// libFuzzer target: the LLM engine's JSON readers (src/nlp/model_config.cc, model_weights.cc):
// config.json -> ModelConfig and model.safetensors.index.json's weight_map. Every input goes to
// both.
//
// Contract checked: any input either parses or throws spore::Error (never nlohmann's own
// exceptions, a crash or a sanitizer report); a parsed config has the invariants the decoder's
// shape arithmetic relies on (positive sizes, heads dividing, an even rotary dimension within
// the head), and a parsed index has only plain file names.
#include <cstddef>
#include <cstdint>
#include <string>

#include "nlp/model_internal.h"
#include "spore/error.h"

namespace {
void require(bool ok) {
  if (!ok) __builtin_trap();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const nlp::ModelConfig c = nlp::config_from_json(nlp::parse_json_text(text, "fuzz"), "fuzz");
    require(c.vocab_size > 0 && c.hidden_size > 0 && c.num_layers > 0 && c.intermediate_size > 0);
    require(c.num_heads > 0 && c.num_kv_heads > 0 && c.num_heads % c.num_kv_heads == 0);
    require(c.head_dim > 0 && c.rope_dim > 0 && c.rope_dim % 2 == 0 && c.rope_dim <= c.head_dim);
    double scale = 0;
    const auto inv = nlp::rope_inv_freq(c, c.max_position_embeddings, &scale);
    require(static_cast<int64_t>(inv.size()) == c.rope_dim / 2);
  } catch (const Error&) {
  }
  try {
    for (const auto& [name, file] : nlp::parse_safetensors_index(text, "fuzz"))
      require(!file.empty() && file.find('/') == std::string::npos);
  } catch (const Error&) {
  }
  return 0;
}
