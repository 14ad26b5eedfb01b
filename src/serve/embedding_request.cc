// Parsing of /v1/embeddings and /v1/rerank bodies (embedding_request.h, NOTE [Embeddings]).
#include "serve/embedding_request.h"

#include <limits>

namespace spore::serve {

namespace {

using nlohmann::json;

ApiError type_error(const std::string& field, const std::string& want) {
  return bad_field(field, "expected " + want, "invalid_type");
}

void check_model(const json& body, const EmbeddingLimits& limits, std::string& out) {
  auto m = body.find("model");
  if (m == body.end() || m->is_null()) return;
  if (!m->is_string()) throw type_error("model", "a string");
  out = m->get<std::string>();
  if (!limits.model_id.empty() && !out.empty() && out != limits.model_id)
    throw ApiError(404, "The model '" + out + "' is not served here; GET /v1/models lists '" + limits.model_id + "'",
                   "invalid_request_error", "model", "model_not_found");
}

// A token-id array: integers in [0, vocab).
std::vector<int32_t> token_ids(const json& a, const std::string& field, const EmbeddingLimits& limits) {
  std::vector<int32_t> ids;
  ids.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const json& x = a[i];
    const bool ok = x.is_number_unsigned() ? x.get<uint64_t>() < static_cast<uint64_t>(limits.vocab)
                                           : x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < limits.vocab;
    if (!ok)
      throw bad_field(field + "[" + std::to_string(i) + "]",
                      "is not a token id; ids are integers in [0, " + std::to_string(limits.vocab) + ")");
    ids.push_back(static_cast<int32_t>(x.get<int64_t>()));
  }
  if (ids.empty()) throw bad_field(field, "an input may not be empty", "empty_input");
  return ids;
}

EmbeddingInput text_input(const json& s, const std::string& field) {
  EmbeddingInput in;
  in.text = s.get<std::string>();
  if (in.text.empty()) throw bad_field(field, "an input may not be an empty string", "empty_input");
  return in;
}

}  // namespace

EmbeddingRequest parse_embedding_request(std::string_view body_text, const EmbeddingLimits& limits) {
  const json body = parse_json_object(body_text, limits.max_body_bytes);
  EmbeddingRequest r;
  check_model(body, limits, r.model);
  auto in = body.find("input");
  if (in == body.end() || in->is_null())
    throw bad_field("input", "is required: a string, an array of strings, or token ids", "missing_field");
  if (in->is_string()) {
    r.inputs.push_back(text_input(*in, "input"));
  } else if (in->is_array()) {
    if (in->empty()) throw bad_field("input", "is an empty array; give at least one input", "empty_input");
    if (static_cast<int64_t>(in->size()) > limits.max_inputs)
      throw bad_field("input", "has " + std::to_string(in->size()) + " entries; at most " +
                                   std::to_string(limits.max_inputs) + " per request", "too_many_inputs");
    const json& first = (*in)[0];
    if (first.is_number()) {  // one input given as token ids
      EmbeddingInput e;
      e.is_ids = true;
      e.ids = token_ids(*in, "input", limits);
      r.inputs.push_back(std::move(e));
    } else {
      for (size_t i = 0; i < in->size(); ++i) {
        const json& x = (*in)[i];
        const std::string field = "input[" + std::to_string(i) + "]";
        if (x.is_string()) {
          r.inputs.push_back(text_input(x, field));
        } else if (x.is_array()) {
          EmbeddingInput e;
          e.is_ids = true;
          e.ids = token_ids(x, field, limits);
          r.inputs.push_back(std::move(e));
        } else {
          throw type_error(field, "a string or an array of token ids");
        }
      }
    }
  } else {
    throw type_error("input", "a string, an array of strings, or token ids");
  }
  if (auto f = body.find("encoding_format"); f != body.end() && !f->is_null()) {
    if (!f->is_string()) throw type_error("encoding_format", "a string");
    const std::string v = *f;
    if (v != "float" && v != "base64") throw bad_field("encoding_format", "is '" + v.substr(0, 40) + "', not float or base64");
    r.base64 = v == "base64";
  }
  if (auto d = body.find("dimensions"); d != body.end() && !d->is_null()) {
    if (!d->is_number_integer()) throw type_error("dimensions", "an integer");
    if (!d->is_number_unsigned() || d->get<uint64_t>() < 1 || d->get<uint64_t>() > static_cast<uint64_t>(limits.dimensions))
      throw bad_field("dimensions", "must be in [1, " + std::to_string(limits.dimensions) + "], the model's vector length");
    r.dimensions = d->get<int64_t>();
  }
  return r;
}

RerankRequest parse_rerank_request(std::string_view body_text, const EmbeddingLimits& limits) {
  const json body = parse_json_object(body_text, limits.max_body_bytes);
  RerankRequest r;
  check_model(body, limits, r.model);
  auto q = body.find("query");
  if (q == body.end() || !q->is_string()) throw type_error("query", "a string (required)");
  r.query = q->get<std::string>();
  if (r.query.empty()) throw bad_field("query", "may not be empty", "empty_input");
  auto docs = body.find("documents");
  if (docs == body.end() || !docs->is_array()) throw type_error("documents", "an array of strings (required)");
  if (docs->empty()) throw bad_field("documents", "is an empty array; give at least one document", "empty_input");
  if (static_cast<int64_t>(docs->size()) > limits.max_inputs)
    throw bad_field("documents", "has " + std::to_string(docs->size()) + " entries; at most " +
                                     std::to_string(limits.max_inputs) + " per request", "too_many_inputs");
  for (size_t i = 0; i < docs->size(); ++i) {
    const json& d = (*docs)[i];
    const std::string field = "documents[" + std::to_string(i) + "]";
    if (!d.is_string()) throw type_error(field, "a string");
    if (d.get<std::string>().empty()) throw bad_field(field, "may not be empty", "empty_input");
    r.documents.push_back(d.get<std::string>());
  }
  if (auto n = body.find("top_n"); n != body.end() && !n->is_null()) {
    if (!n->is_number_integer()) throw type_error("top_n", "an integer");
    if (!n->is_number_unsigned() || n->get<uint64_t>() < 1) throw bad_field("top_n", "must be at least 1");
    r.top_n = static_cast<int64_t>(std::min<uint64_t>(n->get<uint64_t>(), std::numeric_limits<int32_t>::max()));
  }
  for (const char* k : {"return_documents", "return_text"})
    if (auto b = body.find(k); b != body.end() && !b->is_null()) {
      if (!b->is_boolean()) throw type_error(k, "a boolean");
      r.return_documents = r.return_documents || b->get<bool>();
    }
  return r;
}

}  // namespace spore::serve
