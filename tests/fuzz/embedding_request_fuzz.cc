// libFuzzer target: the /v1/embeddings and /v1/rerank body parsers (src/serve/
// embedding_request.cc, NOTE [Embeddings]), fed raw bodies. The first byte picks the route (odd:
// rerank, even: embeddings); the rest is the body.
//
// Contract checked: a body either parses or throws ApiError with a 4xx status (400; 404 for
// another model's name; 413 only past the size bound) and a message; a parsed request holds at
// least one input, at most max_inputs, no empty input, token ids inside the vocabulary and
// dimensions in [1, the model's].
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "serve/embedding_request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  if (size == 0) return 0;
  const bool rerank = data[0] & 1;
  const std::string body(reinterpret_cast<const char*>(data) + 1, size - 1);
  serve::EmbeddingLimits limits;
  limits.model_id = "bert";
  limits.vocab = 100;
  limits.dimensions = 32;
  limits.max_inputs = 16;
  try {
    if (rerank) {
      const serve::RerankRequest r = serve::parse_rerank_request(body, limits);
      fuzz::require(!r.query.empty(), "a query");
      fuzz::require(!r.documents.empty() && (int64_t)r.documents.size() <= limits.max_inputs, "documents in range");
      for (const auto& d : r.documents) fuzz::require(!d.empty(), "no empty document");
      fuzz::require(!r.top_n || *r.top_n >= 1, "top_n at least 1");
    } else {
      const serve::EmbeddingRequest r = serve::parse_embedding_request(body, limits);
      fuzz::require(!r.inputs.empty() && (int64_t)r.inputs.size() <= limits.max_inputs, "inputs in range");
      for (const auto& in : r.inputs) {
        fuzz::require(in.is_ids ? !in.ids.empty() : !in.text.empty(), "no empty input");
        for (int32_t id : in.ids) fuzz::require(id >= 0 && id < limits.vocab, "ids inside the vocabulary");
      }
      fuzz::require(!r.dimensions || (*r.dimensions >= 1 && *r.dimensions <= limits.dimensions), "dimensions in range");
    }
  } catch (const serve::ApiError& e) {
    fuzz::require(e.status == 400 || e.status == 404 || (e.status == 413 && body.size() > limits.max_body_bytes),
                  "a parse error is a 400 (404 another model, 413 only past the size bound)");
    fuzz::require(*e.what() != '\0', "an error says what is wrong");
    (void)e.to_json().dump();
  }
  return 0;
}
