// The `tokenizer.ggml.pre` names of llama.cpp's vocabulary loader (src/llama-vocab.cpp in the
// sdist, NOTE [GGUF pre-tokenizers]), one row per pre-tokenizer: the names that select it, the
// regexes run in order (each splits the previous one's pieces, every match and every gap a
// piece, as Hugging Face's Split with "Isolated"), and the loader's per-name flags.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace spore::nlp::detail {

struct GgufPreTokenizer {
  std::vector<const char*> names;
  std::vector<const char*> regexes;
  bool nfc = false;            // the model's tokenizer.json normalises to NFC first (Qwen)
  bool ignore_merges = false;  // a word that is a vocabulary entry is taken whole (Llama 3)
  bool add_bos = false;        // BOS by default when tokenizer.ggml.add_bos_token is absent
};

// The row naming `pre`, or nullptr.
const GgufPreTokenizer* find_gguf_pre_tokenizer(std::string_view pre);
// Every name of every row, comma-separated, for the error that names an unknown one.
std::string gguf_pre_tokenizer_names();
// Every row (the vocabulary tests iterate them).
const std::vector<GgufPreTokenizer>& gguf_pre_tokenizers();

}  // namespace spore::nlp::detail
