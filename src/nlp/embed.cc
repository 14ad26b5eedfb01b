// EmbeddingModel (include/spore/nlp/embed.h, NOTE [Embeddings]): an encoder (src/nlp/models/
// encoder.cc) or a decoder run for its final hidden states, pooled and L2-normalised; and the
// cross-encoder's scores.
#include "spore/nlp/embed.h"

#include <algorithm>
#include <cmath>
#include <mutex>

#include "nlp/model_internal.h"
#include "nlp/models/encoder.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/ops.h"

namespace spore::nlp {

namespace fs = std::filesystem;

std::string pooling_name(Pooling p) {
  switch (p) {
    case Pooling::kNone: return "none";
    case Pooling::kMean: return "mean";
    case Pooling::kCls: return "cls";
    case Pooling::kLast: return "last";
    case Pooling::kRank: return "rank";
  }
  return "none";
}

Pooling parse_pooling(const std::string& name) {
  for (Pooling p : {Pooling::kMean, Pooling::kCls, Pooling::kLast, Pooling::kRank, Pooling::kNone})
    if (pooling_name(p) == name) return p;
  throw Error(ErrorCode::kValue, "pooling '" + name + "' is not one of mean, cls, last, rank, none");
}

struct EmbeddingModel::Impl {
  fs::path path;
  std::string format, family, architecture;
  Pooling pooling = Pooling::kMean;
  int64_t dimensions = 0, context = 0, vocab = 0;
  std::optional<Tokenizer> tokenizer;
  std::unique_ptr<models::Encoder> encoder;  // or
  LoadedModel decoder;
  mutable std::mutex decoder_mu;  // a decoder's pass writes a cache

  // Token vectors of each input: float32 [len, hidden].
  std::vector<Tensor> hidden(const std::vector<std::vector<int32_t>>& ids,
                             const std::vector<std::vector<int32_t>>& types) const {
    if (encoder) return encoder->forward(ids, types);
    std::lock_guard<std::mutex> lock(decoder_mu);
    int64_t longest = 0;
    for (const auto& s : ids) longest = std::max<int64_t>(longest, static_cast<int64_t>(s.size()));
    auto cache = decoder.lm->make_cache(1, longest, DType::kFloat32);
    std::vector<Tensor> out;
    for (const auto& s : ids) {
      SequenceChunk c{0, 0, s, /*all_logits=*/true};
      out.push_back(decoder.lm->forward_hidden({&c, 1}, *cache));
    }
    return out;
  }

  void check(const std::vector<int32_t>& ids, size_t index) const {
    const std::string which = "input " + std::to_string(index);
    if (ids.empty()) throw Error(ErrorCode::kValue, which + " has no tokens");
    if (static_cast<int64_t>(ids.size()) > context)
      throw Error(ErrorCode::kValue, which + " has " + std::to_string(ids.size()) + " tokens, more than the model's context of " +
                                         std::to_string(context) + " (shorten it or split it)");
    for (int32_t id : ids)
      if (id < 0 || id >= vocab)
        throw Error(ErrorCode::kValue, which + " holds token id " + std::to_string(id) + ", outside the vocabulary [0, " +
                                           std::to_string(vocab) + ")");
  }
};

EmbeddingModel::EmbeddingModel(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
fs::path EmbeddingModel::path() const { return impl_->path; }
std::string EmbeddingModel::format() const { return impl_->format; }
std::string EmbeddingModel::family() const { return impl_->family; }
std::string EmbeddingModel::architecture() const { return impl_->architecture; }
bool EmbeddingModel::is_encoder() const { return impl_->encoder != nullptr; }
Pooling EmbeddingModel::pooling() const { return impl_->pooling; }
int64_t EmbeddingModel::dimensions() const { return impl_->dimensions; }
int64_t EmbeddingModel::context() const { return impl_->context; }
bool EmbeddingModel::can_rerank() const {
  return impl_->encoder && impl_->encoder->has_classifier() && impl_->encoder->config().num_labels == 1;
}
const Tokenizer& EmbeddingModel::tokenizer() const { return *impl_->tokenizer; }
MemoryReport EmbeddingModel::memory() const {
  return impl_->encoder ? impl_->encoder->memory() : impl_->decoder.lm->weight_memory();
}

std::vector<int32_t> EmbeddingModel::tokenize(std::string_view text) const { return impl_->tokenizer->encode(text, true); }

std::vector<std::vector<float>> EmbeddingModel::embed(const std::vector<std::vector<int32_t>>& inputs) const {
  if (impl_->pooling == Pooling::kRank || impl_->pooling == Pooling::kNone)
    throw Error(ErrorCode::kUnsupported, impl_->path.string() + ": pooling '" + pooling_name(impl_->pooling) +
                                             "' gives no sentence vector; load it with mean, cls or last pooling");
  for (size_t i = 0; i < inputs.size(); ++i) impl_->check(inputs[i], i);
  const std::vector<Tensor> hs = impl_->hidden(inputs, {});
  std::vector<std::vector<float>> out;
  for (const Tensor& h : hs) {
    const int64_t len = h.size(0);
    Tensor v = impl_->pooling == Pooling::kMean  ? mean(h, {0})
               : impl_->pooling == Pooling::kCls ? reshape(slice(h, 0, 0, 1), {h.size(1)})
                                                 : reshape(slice(h, 0, len - 1, len), {h.size(1)});
    std::vector<float> x = v.contiguous().to_vector<float>();
    // torch.nn.functional.normalize: x / max(||x||, 1e-12).
    double norm = 0;
    for (float f : x) norm += static_cast<double>(f) * f;
    norm = std::max(std::sqrt(norm), 1e-12);
    for (float& f : x) f = static_cast<float>(f / norm);
    out.push_back(std::move(x));
  }
  return out;
}

std::vector<float> EmbeddingModel::rerank(std::string_view query, const std::vector<std::string>& documents,
                                          int64_t* tokens) const {
  if (!can_rerank())
    throw Error(ErrorCode::kUnsupported, impl_->path.string() + " is not a cross-encoder (a classifier with one label, "
                                                                "e.g. BertForSequenceClassification); it cannot rerank");
  // BERT's pair: [CLS] query [SEP] document [SEP], token types 0 then 1 (the single template's
  // ids around each part, the document's leading [CLS] dropped).
  const std::vector<int32_t> q = tokenize(query);
  std::vector<std::vector<int32_t>> ids, types;
  for (size_t d = 0; d < documents.size(); ++d) {
    std::vector<int32_t> doc = tokenize(documents[d]);
    const bool lead = impl_->tokenizer->bos_id() && !doc.empty() && doc.front() == *impl_->tokenizer->bos_id();
    std::vector<int32_t> pair = q;
    pair.insert(pair.end(), doc.begin() + (lead ? 1 : 0), doc.end());
    std::vector<int32_t> type(q.size(), 0);
    type.resize(pair.size(), 1);
    impl_->check(pair, d);
    if (tokens) *tokens += static_cast<int64_t>(pair.size());
    ids.push_back(std::move(pair));
    types.push_back(std::move(type));
  }
  std::vector<float> scores;
  if (ids.empty()) return scores;
  for (const Tensor& h : impl_->hidden(ids, types)) scores.push_back(impl_->encoder->classify(h).to_vector<float>()[0]);
  return scores;
}

namespace {

bool gguf_path_of(const fs::path& path, fs::path& gguf) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    gguf = path;
    return true;
  }
  if (fs::exists(path / "config.json", ec)) return false;
  for (const auto& e : fs::directory_iterator(path, ec))
    if (e.path().extension() == ".gguf") {
      if (!gguf.empty()) return false;  // load_model names the ambiguity
      gguf = e.path();
    }
  return !gguf.empty();
}

}  // namespace

bool is_encoder_model(const fs::path& path) {
  try {
    fs::path g;
    if (gguf_path_of(path, g)) {
      const GgufFile f(g);
      return models::find_encoder_family_gguf(f.get_string("general.architecture")) != nullptr;
    }
    return models::encoder_config_hf(path).has_value();
  } catch (const std::exception&) {
    return false;
  }
}

EmbeddingModel load_embedding_model(const fs::path& path, const EmbeddingLoadOptions& options) {
  auto m = std::make_shared<EmbeddingModel::Impl>();
  m->path = path;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(ErrorCode::kIO, path.string() + ": no such model file or directory (name a Hugging Face model directory or a .gguf file)");
  fs::path gguf;
  std::optional<models::EncoderConfig> ec_cfg;
  std::shared_ptr<const GgufFile> g;
  if (gguf_path_of(path, gguf)) {
    g = std::make_shared<const GgufFile>(gguf);
    ec_cfg = models::encoder_config_gguf(*g);
  } else {
    ec_cfg = models::encoder_config_hf(path);
  }
  if (ec_cfg) {
    // The artifact's lock (when there is one) is checked as load_model checks it.
    fs::path lock;
    try {
      lock = find_artifact_lock(g ? gguf.parent_path() : path);
    } catch (const Error&) {
    }
    if (!lock.empty())
      if (const VerifyResult v = verify_artifact(lock); !v.ok() && !options.allow_unverified) require_verified(v);
    m->format = g ? "gguf" : "safetensors";
    m->family = ec_cfg->family;
    m->architecture = ec_cfg->architecture;
    auto ws = g ? open_gguf_weights(g) : open_safetensors_weights(path);
    m->encoder = std::make_unique<models::Encoder>(*ec_cfg, *ws, g != nullptr);
    const models::EncoderConfig& c = m->encoder->config();
    m->dimensions = c.hidden_size;
    m->context = c.max_positions;
    m->vocab = c.vocab_size;
    if (g) {
      if (!g->contains("tokenizer.ggml.model"))
        throw Error(ErrorCode::kFormat, gguf.string() + ": the model carries no tokenizer (tokenizer.ggml.*)");
      m->tokenizer = Tokenizer::from_gguf(*g);
    } else {
      if (!fs::exists(path / "tokenizer.json", ec))
        throw Error(ErrorCode::kFormat, path.string() + ": no tokenizer.json beside config.json (embedding needs the "
                                                        "model's WordPiece tokenizer)");
      m->tokenizer = Tokenizer::from_file(path / "tokenizer.json");
    }
    // Default: what the artifact says; a cross-encoder ranks; else mean (sentence-transformers'
    // default for a plain transformer).
    m->pooling = c.pooling.value_or(c.num_labels == 1 ? Pooling::kRank : Pooling::kMean);
  } else {
    LoadOptions lo;
    lo.allow_unverified = options.allow_unverified;
    lo.require_tokenizer = true;
    // auto: a GGUF decoder rounds as llama.cpp does (NOTE [LLM numerics]), as in generation.
    m->decoder = load_model(path, lo);
    const ModelConfig& c = m->decoder.lm->config();
    m->format = m->decoder.format;
    m->family = c.family;
    m->architecture = c.architecture;
    m->dimensions = c.hidden_size;
    m->context = c.max_position_embeddings;
    m->vocab = c.vocab_size;
    m->tokenizer = m->decoder.tokenizer;
    // A decoder's token sees only what precedes it: the last one has read the whole input
    // (llama.cpp's LAST pooling, Qwen3-Embedding's). GGUF may say otherwise.
    m->pooling = Pooling::kLast;
    if (g && g->contains(c.architecture + ".pooling_type")) {
      const int64_t p = g->get_int(c.architecture + ".pooling_type");
      if (p >= 1 && p <= 3) m->pooling = static_cast<Pooling>(p);
    }
  }
  if (options.pooling) {
    if (*options.pooling == Pooling::kRank && !(m->encoder && m->encoder->has_classifier()))
      throw Error(ErrorCode::kValue, path.string() + ": rank pooling needs a classifier head, which this model lacks");
    if (*options.pooling == Pooling::kNone)
      throw Error(ErrorCode::kValue, "pooling 'none' gives token vectors, not one vector per input; choose mean, cls or last");
    m->pooling = *options.pooling;
  }
  return EmbeddingModel(std::move(m));
}

}  // namespace spore::nlp
