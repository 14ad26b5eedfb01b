// Tokenizers identical to Hugging Face `tokenizers` (NOTE [Tokenizers] in docs/design.md):
// byte-level BPE (Qwen, Llama 3, GPT-2) and SentencePiece-style BPE with byte fallback (Llama 2,
// Mistral), read from a tokenizer.json, a model directory holding one, or a GGUF file's
// `tokenizer.ggml.*` metadata. Encoding splits out added tokens, normalises, pre-tokenises (the
// file's regexes through PCRE2), merges by rank (or, for SentencePiece GGUFs, by score) and adds
// the post-processor's special tokens; decoding runs the file's decoder chain.
//
// Thread safety: a Tokenizer is immutable after loading apart from an internal word cache guarded
// by a mutex, so one instance may encode and decode from several threads at once.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace spore {
class GgufFile;
}

namespace spore::nlp {

struct EncodeOptions {
  // Add the post-processor's special tokens (BOS, EOS, ...), as Hugging Face's
  // `encode(text, add_special_tokens=True)`.
  bool add_special_tokens = false;
  // Invalid UTF-8 in the input: false throws kValue naming the byte offset; true replaces each
  // maximal invalid sequence with U+FFFD first (Rust's String::from_utf8_lossy, which is what
  // Hugging Face's Python binding does with undecodable bytes).
  bool replace_invalid_utf8 = false;
};

class Tokenizer {
 public:
  // A tokenizer.json, a directory holding tokenizer.json (or a single .gguf), or a .gguf file.
  // kIO when the path cannot be read; kFormat naming the field for a malformed file;
  // kUnsupported naming the component for a model, normalizer, pre-tokenizer or decoder type
  // this build does not implement.
  static Tokenizer from_file(const std::filesystem::path& path);
  // The text of a tokenizer.json; `source` names it in error messages.
  static Tokenizer from_json(std::string_view json_text, std::string_view source = "<memory>");
  // From a GGUF file's `tokenizer.ggml.*` metadata (model `gpt2` or `llama`).
  static Tokenizer from_gguf(const GgufFile& gguf);

  std::vector<int32_t> encode(std::string_view text, const EncodeOptions& options = {}) const;
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens) const {
    EncodeOptions o;
    o.add_special_tokens = add_special_tokens;
    return encode(text, o);
  }
  // Hugging Face's decode(ids, skip_special_tokens): kValue naming the id and the vocabulary
  // size for an id outside it.
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;

  // One past the largest id (model vocabulary and added tokens).
  int32_t vocab_size() const;
  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token's text as stored in the vocabulary (byte-level tokens in their mapped form);
  // kValue for an id outside the vocabulary.
  const std::string& id_to_token(int32_t id) const;
  bool is_special(int32_t id) const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  std::optional<int32_t> pad_id() const;

  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

// Incremental detokenisation (NOTE [Streaming detokenisation]): fed one id at a time, returns the
// text that is now final, as complete UTF-8, and keeps the rest. The concatenation of every push()
// and the final finish() equals tokenizer.decode(all ids), and no piece carries a U+FFFD that the
// full decode lacks.
class StreamDecoder {
 public:
  explicit StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens = false);
  std::string push(int32_t id);
  // The text still held back (an incomplete character at the end of the stream decodes as the
  // full decode does, with U+FFFD); the decoder is then reset for a new stream.
  std::string finish();

 private:
  Tokenizer tokenizer_;
  bool skip_special_;
  std::vector<int32_t> ids_;
  size_t prefix_ = 0;  // ids_[prefix_, read_) decode to text already emitted: the context window
  size_t read_ = 0;
  std::string prefix_text_;
};

}  // namespace spore::nlp
