// Text embeddings and reranking (NOTE [Embeddings] in docs/design.md): encoder models (the `bert`
// family: BERT, MiniLM, BGE, GTE shapes; and `nomic-bert`: rotary, SwiGLU, fused qkv) from a
// Hugging Face directory or a GGUF file, and decoder models run as embedders (last-token or mean
// pooling of the final norm's output). Vectors are pooled as the artifact says
// (sentence-transformers' 1_Pooling/config.json, GGUF `<arch>.pooling_type`) unless the caller
// overrides it, and L2-normalised. A cross-encoder (BertForSequenceClassification with one label)
// scores query/document pairs.
//
//   auto m = spore::nlp::load_embedding_model("tests/fixtures/embed/bert");
//   std::vector<std::vector<float>> v = m.embed({m.tokenize("Hello world!")});
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "spore/nlp/model.h"
#include "spore/nlp/tokenizer.h"

namespace spore::nlp {

// How one sequence's token vectors become one vector. kRank: the classifier head's score (a
// cross-encoder), as llama.cpp's LLAMA_POOLING_TYPE_RANK. Values are GGUF's pooling_type numbers.
enum class Pooling { kNone = 0, kMean = 1, kCls = 2, kLast = 3, kRank = 4 };
// "none", "mean", "cls", "last", "rank".
std::string pooling_name(Pooling p);
// kValue naming the accepted names.
Pooling parse_pooling(const std::string& name);

struct EmbeddingLoadOptions {
  std::optional<Pooling> pooling;  // overrides what the artifact says
  bool allow_unverified = false;   // as LoadOptions
};

class EmbeddingModel {
 public:
  struct Impl;
  explicit EmbeddingModel(std::shared_ptr<Impl> impl);

  std::filesystem::path path() const;
  std::string format() const;         // "safetensors" or "gguf"
  std::string family() const;         // "bert", "nomic-bert", or the decoder family ("llama", ...)
  std::string architecture() const;   // as the artifact names it
  bool is_encoder() const;
  Pooling pooling() const;
  int64_t dimensions() const;         // the vector's length
  int64_t context() const;            // most tokens one input may have (special tokens included)
  bool can_rerank() const;            // has a one-label classifier head
  const Tokenizer& tokenizer() const;
  MemoryReport memory() const;        // the weights, mapped and resident

  // The ids of `text` with the model's special tokens ([CLS] .. [SEP]).
  std::vector<int32_t> tokenize(std::string_view text) const;
  // One L2-normalised vector per input (token ids with their special tokens). kValue naming the
  // input when it is empty, longer than context(), or holds an id outside the vocabulary.
  std::vector<std::vector<float>> embed(const std::vector<std::vector<int32_t>>& inputs) const;
  // The classifier's score (its raw logit, as transformers and llama.cpp's /v1/rerank give it)
  // of each document for the query, in the documents' order; the pair is [CLS] query [SEP]
  // document [SEP] with token types 0 then 1. kUnsupported when !can_rerank(); kValue when a
  // pair does not fit the context. `tokens` (when given) receives the tokens counted.
  std::vector<float> rerank(std::string_view query, const std::vector<std::string>& documents,
                            int64_t* tokens = nullptr) const;

 private:
  std::shared_ptr<Impl> impl_;
};

// A Hugging Face directory (config.json of an encoder or a decoder family) or a GGUF file.
// Errors name the file and field, as load_model's.
EmbeddingModel load_embedding_model(const std::filesystem::path& path, const EmbeddingLoadOptions& options = {});

// Whether `path` holds an encoder model (config.json's model_type / architectures, or GGUF
// general.architecture), without loading weights. False for anything unreadable.
bool is_encoder_model(const std::filesystem::path& path);

}  // namespace spore::nlp
