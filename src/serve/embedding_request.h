// /v1/embeddings and /v1/rerank request bodies (NOTE [Embeddings]): OpenAI's embeddings request
// (input: a string, an array of strings, an array of token ids, or an array of such arrays;
// encoding_format float | base64; dimensions) and llama.cpp server's rerank request (query,
// documents, top_n). Every malformed body is an ApiError 400 naming the field (413 past the size
// bound), never an exception of another kind. (Fuzzed: tests/fuzz/embedding_request_fuzz.cc.)
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "serve/api_error.h"
#include "serve/json_body.h"

namespace spore::serve {

struct EmbeddingLimits {
  std::string model_id;      // the served model's id; "" accepts any "model"
  int64_t vocab = 0;         // token ids must be in [0, vocab)
  int64_t dimensions = 0;    // the model's vector length; `dimensions` may not exceed it
  int64_t max_inputs = 2048; // OpenAI's limit on inputs per request
  std::size_t max_body_bytes = kDefaultMaxBodyBytes;
};

// One input: a text, or token ids given by the client (then `text` is unused).
struct EmbeddingInput {
  bool is_ids = false;
  std::string text;
  std::vector<int32_t> ids;
};

struct EmbeddingRequest {
  std::string model;
  std::vector<EmbeddingInput> inputs;  // at least one
  bool base64 = false;                 // encoding_format "base64": little-endian float32 bytes
  std::optional<int64_t> dimensions;   // in [1, limits.dimensions]
};

EmbeddingRequest parse_embedding_request(std::string_view body, const EmbeddingLimits& limits);

struct RerankRequest {
  std::string model;
  std::string query;
  std::vector<std::string> documents;  // at least one
  std::optional<int64_t> top_n;        // >= 1 (more than the documents: all of them)
  bool return_documents = false;       // echo each document's text in its result
};

RerankRequest parse_rerank_request(std::string_view body, const EmbeddingLimits& limits);

}  // namespace spore::serve
