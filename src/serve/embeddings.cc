// POST /v1/embeddings (OpenAI's) and POST /v1/rerank (llama.cpp server's) (NOTE [Embeddings]).
// An encoder model serves these routes only (the completion routes answer 400 for it); a decoder
// model serves both, its embedder (last-token pooling) loaded on the first request. Embedding
// passes run one at a time per model (its embed_mu), on the HTTP thread, apart from the
// generation worker: they read the weights and write only their own activations.
#include <openssl/evp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "serve/embedding_request.h"
#include "serve/server_impl.h"
#include "spore/error.h"

namespace spore::serve {

using nlohmann::json;

namespace {

// Little-endian float32 bytes, base64 (OpenAI's encoding_format "base64"; x86 and ARM hosts are
// little-endian, which the static_assert pins).
std::string base64_floats(const std::vector<float>& v) {
  static_assert(std::endian::native == std::endian::little, "base64 embeddings assume a little-endian host");
  const size_t n = v.size() * sizeof(float);
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(v.data()), static_cast<int>(n));
  out.resize(static_cast<size_t>(len));
  return out;
}

// The first `d` components, L2-normalised again (Matryoshka truncation, as OpenAI's dimensions).
void truncate(std::vector<float>& v, int64_t d) {
  v.resize(static_cast<size_t>(d));
  double norm = 0;
  for (float f : v) norm += static_cast<double>(f) * f;
  norm = std::max(std::sqrt(norm), 1e-12);
  for (float& f : v) f = static_cast<float>(f / norm);
}

}  // namespace

const nlp::EmbeddingModel& Server::Impl::embedding_model(const Lease& lease) {
  ModelInstance& inst = lease.held->instance();
  std::lock_guard<std::mutex> lock(inst.embed_mu);
  if (!inst.embedder) {
    // A decoder's embedder: the same artifact, run for its hidden states (NOTE [Embeddings]),
    // counted in the model's bytes (NOTE [Many models]).
    nlp::EmbeddingLoadOptions o;
    o.allow_unverified = options.allow_unverified;
    inst.embedder = std::make_unique<nlp::EmbeddingModel>(nlp::load_embedding_model(inst.model->path, o));
    lease.held->grew(inst.embedder->memory().total());
  }
  return *inst.embedder;
}

void Server::Impl::embedding_routes(const std::function<HttpServer::Handler(Handler)>& guarded) {
  http.Post("/v1/embeddings", guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const Lease lease = lease_for(parse_json_object(req.body, options.max_body_bytes));
    const std::string& model_id = lease.name();
    const nlp::EmbeddingModel& m = embedding_model(lease);
    if (m.pooling() == nlp::Pooling::kRank)
      throw ApiError(400, model_id + " is a cross-encoder (a reranker); it scores pairs at POST /v1/rerank and gives "
                               "no embeddings", "invalid_request_error", "model", "model_not_embedding");
    EmbeddingLimits lim{model_id, m.tokenizer().vocab_size(), m.dimensions(), 2048, options.max_body_bytes};
    const EmbeddingRequest r = parse_embedding_request(req.body, lim);
    std::vector<std::vector<int32_t>> ids;
    int64_t tokens = 0;
    for (size_t i = 0; i < r.inputs.size(); ++i) {
      const EmbeddingInput& in = r.inputs[i];
      ids.push_back(in.is_ids ? in.ids : m.tokenize(in.text));
      const int64_t n = static_cast<int64_t>(ids.back().size());
      if (n > m.context())
        throw ApiError(400, "input[" + std::to_string(i) + "] has " + std::to_string(n) + " tokens, more than the model's context of " +
                                std::to_string(m.context()) + "; shorten it or split it",
                       "invalid_request_error", "input", "context_length_exceeded");
      tokens += n;
    }
    std::vector<std::vector<float>> vectors;
    {
      std::lock_guard<std::mutex> lock(lease->embed_mu);
      vectors = m.embed(ids);
    }
    json data = json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
      if (r.dimensions) truncate(vectors[i], *r.dimensions);
      json e = {{"object", "embedding"}, {"index", i}};
      if (r.base64)
        e["embedding"] = base64_floats(vectors[i]);
      else
        e["embedding"] = vectors[i];
      data.push_back(std::move(e));
    }
    send_json(res, {{"object", "list"},
                    {"data", data},
                    {"model", model_id},
                    {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
  }));
  auto rerank = guarded([this](const httplib::Request& req, httplib::Response& res) {
    require_ready();
    const Lease lease = lease_for(parse_json_object(req.body, options.max_body_bytes));
    const std::string& model_id = lease.name();
    const nlp::EmbeddingModel& m = embedding_model(lease);
    if (!m.can_rerank())
      throw ApiError(400, model_id + " is not a cross-encoder (a classifier with one label, e.g. "
                                     "BertForSequenceClassification); start spore serve with a reranker model",
                     "invalid_request_error", "model", "model_not_reranker");
    EmbeddingLimits lim{model_id, m.tokenizer().vocab_size(), m.dimensions(), 2048, options.max_body_bytes};
    const RerankRequest r = parse_rerank_request(req.body, lim);
    int64_t tokens = 0;
    std::vector<float> scores;
    try {
      std::lock_guard<std::mutex> lock(lease->embed_mu);
      scores = m.rerank(r.query, r.documents, &tokens);
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kValue) throw;
      throw ApiError(400, std::string(e.what()) + " (query and document together)", "invalid_request_error",
                     "documents", "context_length_exceeded");
    }
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    if (r.top_n && static_cast<size_t>(*r.top_n) < order.size()) order.resize(static_cast<size_t>(*r.top_n));
    json results = json::array();
    for (size_t i : order) {
      json x = {{"index", i}, {"relevance_score", scores[i]}};
      if (r.return_documents) x["document"] = {{"text", r.documents[i]}};
      results.push_back(std::move(x));
    }
    send_json(res, {{"object", "list"},
                    {"model", model_id},
                    {"results", results},
                    {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}});
  });
  // llama.cpp's server answers all three spellings.
  http.Post("/v1/rerank", rerank);
  http.Post("/rerank", rerank);
  http.Post("/v1/reranking", rerank);
}

}  // namespace spore::serve
