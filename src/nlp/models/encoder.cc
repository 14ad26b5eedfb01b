// The encoder families' lookup, their shared config reading, and the runner of any of them
// (NOTE [Embeddings]): embeddings (+ position rows or rotary positions, + token types) ->
// LayerNorm -> per layer: q/k/v (fused or not) -> bidirectional attention -> output projection ->
// residual -> LayerNorm -> MLP (GELU, or SwiGLU) -> residual -> LayerNorm. Every step is a
// registry op; nothing here names a family.
#include "nlp/models/encoder.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/llm.h"
#include "spore/ops.h"

namespace spore::nlp::models {

namespace fs = std::filesystem;

std::vector<const EncoderFamily*> all_encoder_families() { return {&bert_encoder_family(), &nomic_bert_encoder_family()}; }

const EncoderFamily* find_encoder_family_hf(std::string_view model_type, std::string_view architecture) {
  for (const EncoderFamily* f : all_encoder_families())
    for (const auto& t : f->hf_model_types)
      if (t == model_type) return f;
  for (const EncoderFamily* f : all_encoder_families())
    for (const auto& a : f->hf_architectures)
      if (a == architecture) return f;
  return nullptr;
}

const EncoderFamily* find_encoder_family_gguf(std::string_view arch) {
  for (const EncoderFamily* f : all_encoder_families())
    if (f->gguf_arch == arch) return f;
  return nullptr;
}

int64_t hf_int(const nlohmann::json& cfg, const std::vector<const char*>& names, const std::string& src,
               std::optional<int64_t> def) {
  for (const char* n : names)
    if (auto it = cfg.find(n); it != cfg.end() && !it->is_null()) return json_int(cfg, n, src);
  if (def) return *def;
  config_fail(src, std::string("field \"") + names.front() + "\" is missing");
}

double hf_num(const nlohmann::json& cfg, const std::vector<const char*>& names, const std::string& src, double def) {
  for (const char* n : names)
    if (auto it = cfg.find(n); it != cfg.end() && !it->is_null()) return json_num(cfg, n, src);
  return def;
}

namespace {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, p.string() + ": cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// sentence-transformers: modules.json names the Pooling module's folder; its config.json says
// which mode (the first of mean / cls / last token that is on, as llama.cpp's converter reads it).
std::optional<Pooling> sentence_transformers_pooling(const fs::path& dir) {
  std::error_code ec;
  fs::path folder = "1_Pooling";
  if (fs::exists(dir / "modules.json", ec)) {
    const auto mods = parse_json_text(read_text(dir / "modules.json"), (dir / "modules.json").string());
    if (!mods.is_array()) config_fail((dir / "modules.json").string(), "must be a JSON array of modules");
    for (const auto& m : mods)
      if (m.is_object() && m.value("type", "").ends_with("Pooling") && m.contains("path") && m["path"].is_string())
        folder = m["path"].get<std::string>();
  }
  // The folder must be a plain name inside the model directory (NOTE [Safe file names]).
  if (folder.empty() || folder.is_absolute() || folder.string().find("..") != std::string::npos) return std::nullopt;
  const fs::path file = dir / folder / "config.json";
  if (!fs::exists(file, ec)) return std::nullopt;
  const auto j = parse_json_text(read_text(file), file.string());
  if (!j.is_object()) config_fail(file.string(), "must be a JSON object");
  auto on = [&](const char* k) { return j.contains(k) && j[k].is_boolean() && j[k].get<bool>(); };
  if (on("pooling_mode_mean_tokens")) return Pooling::kMean;
  if (on("pooling_mode_cls_token")) return Pooling::kCls;
  if (on("pooling_mode_lasttoken")) return Pooling::kLast;
  if (j.contains("pooling_mode") && j["pooling_mode"].is_string()) {
    const std::string m = j["pooling_mode"];
    if (m == "mean") return Pooling::kMean;
    if (m == "cls") return Pooling::kCls;
    if (m == "lasttoken") return Pooling::kLast;
  }
  throw Error(ErrorCode::kUnsupported, file.string() + ": only mean, CLS and last-token pooling are supported "
                                                       "(max and mean-sqrt-len are not); pass --pooling to choose one");
}

void check_sizes(const EncoderConfig& c) {
  auto need = [&](int64_t v, const char* what) {
    if (v <= 0 || v > (int64_t{1} << 24)) config_fail(c.source, std::string(what) + " must be positive, got " + std::to_string(v));
  };
  need(c.vocab_size, "the vocabulary size");
  need(c.hidden_size, "the hidden size");
  need(c.intermediate_size, "the intermediate size");
  need(c.num_layers, "the layer count");
  need(c.num_heads, "the head count");
  need(c.max_positions, "the context length");
  if (c.hidden_size % c.num_heads != 0)
    config_fail(c.source, "the hidden size " + std::to_string(c.hidden_size) + " is not a multiple of the " +
                              std::to_string(c.num_heads) + " heads");
  if (c.rope_theta > 0 && (c.hidden_size / c.num_heads) % 2 != 0)
    config_fail(c.source, "rotary positions need an even head size");
  if (c.num_layers > 1024) config_fail(c.source, "more than 1024 layers");
}

}  // namespace

std::optional<EncoderConfig> encoder_config_hf(const fs::path& dir) {
  const fs::path file = dir / "config.json";
  const auto cfg = parse_json_text(read_text(file), file.string());
  if (!cfg.is_object()) config_fail(file.string(), "must be a JSON object");
  const std::string type = cfg.contains("model_type") && cfg["model_type"].is_string() ? cfg["model_type"].get<std::string>() : "";
  std::string arch;
  if (auto a = cfg.find("architectures"); a != cfg.end() && a->is_array() && !a->empty() && (*a)[0].is_string())
    arch = (*a)[0].get<std::string>();
  const EncoderFamily* fam = find_encoder_family_hf(type, arch);
  if (!fam) return std::nullopt;
  EncoderConfig c;
  c.family = fam->name;
  c.architecture = arch.empty() ? type : arch;
  c.source = file.string();
  fam->read_hf(cfg, c);
  if (arch.ends_with("ForSequenceClassification")) {
    c.num_labels = 2;  // transformers' default
    if (auto l = cfg.find("id2label"); l != cfg.end() && l->is_object()) c.num_labels = static_cast<int64_t>(l->size());
    if (cfg.contains("num_labels")) c.num_labels = json_int(cfg, "num_labels", c.source);
  }
  c.pooling = sentence_transformers_pooling(dir);
  check_sizes(c);
  return c;
}

std::optional<EncoderConfig> encoder_config_gguf(const GgufFile& g) {
  const std::string arch = g.get_string("general.architecture");
  const EncoderFamily* fam = find_encoder_family_gguf(arch);
  if (!fam) return std::nullopt;
  EncoderConfig c;
  c.family = fam->name;
  c.architecture = arch;
  c.source = g.source();
  auto key = [&](const char* k) { return arch + "." + k; };
  c.hidden_size = g.get_int(key("embedding_length"));
  c.intermediate_size = g.get_int(key("feed_forward_length"));
  c.num_layers = g.get_int(key("block_count"));
  c.num_heads = g.get_int(key("attention.head_count"));
  c.max_positions = g.get_int(key("context_length"));
  if (g.contains(key("attention.layer_norm_epsilon"))) c.layer_norm_eps = g.get_float(key("attention.layer_norm_epsilon"));
  if (g.contains(key("attention.causal")) && g.get_bool(key("attention.causal")))
    config_fail(c.source, key("attention.causal") + " is true; an encoder attends both ways");
  if (g.contains(key("pooling_type"))) {
    const int64_t p = g.get_int(key("pooling_type"));
    if (p < 0 || p > 4) config_fail(c.source, key("pooling_type") + " is " + std::to_string(p) + ", not 0..4");
    c.pooling = static_cast<Pooling>(p);
  }
  const auto& emb = g.tensor_info(layer_name(fam->names.token_embd.gguf, 0) + ".weight");
  c.vocab_size = emb.dims.size() == 2 ? static_cast<int64_t>(emb.dims[1]) : 0;
  const std::string types = layer_name(fam->names.type_embd.gguf, 0) + ".weight";
  const std::string classifier = fam->names.classifier.gguf + ".weight";  // llama.cpp's cls.output
  for (const auto& t : g.tensors()) {
    if (t.name == types && t.dims.size() == 2) c.type_vocab_size = static_cast<int64_t>(t.dims[1]);
    if (t.name == classifier) c.num_labels = t.dims.size() == 2 ? static_cast<int64_t>(t.dims[1]) : 1;
  }
  fam->read_gguf(g, c);
  check_sizes(c);
  return c;
}

// ---- the runner ---------------------------------------------------------------------------------

Encoder::Encoder(const EncoderConfig& c, WeightStore& ws, bool gguf) : cfg_(c) {
  const EncoderFamily* fam = nullptr;
  for (const EncoderFamily* f : all_encoder_families())
    if (f->name == c.family) fam = f;
  if (!fam) throw Error(ErrorCode::kUnsupported, "encoder family " + c.family + " is not built in");
  const EncoderNames& n = fam->names;
  // A task head's checkpoint keeps the encoder under the family's prefix ("bert.").
  const std::string prefix =
      gguf || c.hf_prefix.empty() || ws.contains(layer_name(n.token_embd.hf, 0) + ".weight") ? "" : c.hf_prefix;
  auto nm = [&](const TensorName& t, int64_t layer, const char* suffix) {
    return prefix + layer_name(gguf ? t.gguf : t.hf, layer) + suffix;
  };
  // Classifier heads are outside the encoder's prefix in transformers ("classifier", not
  // "bert.classifier"; the pooler is "bert.pooler").
  auto head = [&](const TensorName& t, const char* suffix) { return (gguf ? t.gguf : t.hf) + suffix; };
  const int64_t H = c.hidden_size, F = c.intermediate_size;
  token_embd_ = ws.matrix(nm(n.token_embd, 0, ".weight"), c.vocab_size, H);
  if (c.rope_theta <= 0) position_embd_ = ws.matrix(nm(n.position_embd, 0, ".weight"), c.max_positions, H);
  if (c.type_vocab_size > 0 && ws.contains(nm(n.type_embd, 0, ".weight")))
    type_embd_ = ws.matrix(nm(n.type_embd, 0, ".weight"), c.type_vocab_size, H);
  embd_norm_w_ = ws.vector(nm(n.embd_norm, 0, ".weight"), H);
  embd_norm_b_ = ws.vector(nm(n.embd_norm, 0, ".bias"), H);
  auto bias = [&](const TensorName& t, int64_t l, int64_t size, bool present) {
    return present ? ws.vector(nm(t, l, ".bias"), size) : Tensor();
  };
  for (int64_t l = 0; l < c.num_layers; ++l) {
    Layer L;
    if (c.fused_qkv) {
      L.qkv = ws.matrix(nm(n.qkv, l, ".weight"), 3 * H, H);
    } else {
      L.q = ws.matrix(nm(n.q, l, ".weight"), H, H);
      L.k = ws.matrix(nm(n.k, l, ".weight"), H, H);
      L.v = ws.matrix(nm(n.v, l, ".weight"), H, H);
      L.q_b = bias(n.q, l, H, c.qkv_bias);
      L.k_b = bias(n.k, l, H, c.qkv_bias);
      L.v_b = bias(n.v, l, H, c.qkv_bias);
    }
    L.o = ws.matrix(nm(n.attn_out, l, ".weight"), H, H);
    L.o_b = bias(n.attn_out, l, H, c.out_bias);
    L.attn_norm_w = ws.vector(nm(n.attn_out_norm, l, ".weight"), H);
    L.attn_norm_b = ws.vector(nm(n.attn_out_norm, l, ".bias"), H);
    L.up = ws.matrix(nm(n.up, l, ".weight"), F, H);
    L.up_b = bias(n.up, l, F, c.mlp_bias);
    if (c.activation == "swiglu") L.gate = ws.matrix(nm(n.gate, l, ".weight"), F, H);
    L.down = ws.matrix(nm(n.down, l, ".weight"), H, F);
    L.down_b = bias(n.down, l, H, c.mlp_bias);
    L.out_norm_w = ws.vector(nm(n.out_norm, l, ".weight"), H);
    L.out_norm_b = ws.vector(nm(n.out_norm, l, ".bias"), H);
    layers_.push_back(std::move(L));
  }
  if (c.num_labels > 0) {
    classifier_ = ws.matrix(head(n.classifier, ".weight"), c.num_labels, H);
    if (ws.contains(head(n.classifier, ".bias"))) classifier_b_ = ws.vector(head(n.classifier, ".bias"), cfg_.num_labels);
    const std::string pooler = gguf ? head(n.pooler, "") : prefix + head(n.pooler, "");
    if (ws.contains(pooler + ".weight")) {
      pooler_ = ws.matrix(pooler + ".weight", H, H);
      if (ws.contains(pooler + ".bias")) pooler_b_ = ws.vector(pooler + ".bias", H);
    }
  }
  if (c.rope_theta > 0) {
    // Hugging Face's default rope table: 1 / theta^(2i / head_dim).
    const int64_t D = H / c.num_heads;
    std::vector<float> inv(static_cast<size_t>(D / 2));
    for (int64_t i = 0; i < D / 2; ++i)
      inv[static_cast<size_t>(i)] = static_cast<float>(1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(D)));
    inv_freq_ = Tensor::from_vector(inv, Shape{D / 2});
  }
  memory_ = ws.memory();
}

Tensor Encoder::layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) const {
  const Tensor mu = mean(x, {-1}, true);
  const Tensor xc = sub(x, mu);
  const Tensor var = mean(mul(xc, xc), {-1}, true);
  return add(mul(mul(xc, rsqrt(add(var, cfg_.layer_norm_eps))), w), b);
}

namespace {

Tensor lin(const Tensor& x, const Weight& w, const Tensor& b) {
  Tensor y = linear(x, w);
  return b.defined() ? add(y, b) : y;
}

}  // namespace

std::vector<Tensor> Encoder::forward(const std::vector<std::vector<int32_t>>& ids,
                                     const std::vector<std::vector<int32_t>>& types) const {
  std::vector<int32_t> all_ids, all_types;
  std::vector<int64_t> positions;
  for (size_t s = 0; s < ids.size(); ++s) {
    all_ids.insert(all_ids.end(), ids[s].begin(), ids[s].end());
    for (size_t i = 0; i < ids[s].size(); ++i) {
      positions.push_back(static_cast<int64_t>(i));
      all_types.push_back(s < types.size() && i < types[s].size() ? types[s][i] : 0);
    }
  }
  const int64_t N = static_cast<int64_t>(all_ids.size()), H = cfg_.hidden_size, heads = cfg_.num_heads, D = H / heads;
  Tensor h = embed_rows(token_embd_, all_ids);
  if (position_embd_.defined()) {
    std::vector<int32_t> pos32(positions.begin(), positions.end());
    h = add(h, embed_rows(position_embd_, pos32));
  }
  if (type_embd_.defined()) h = add(h, embed_rows(type_embd_, all_types));
  h = layer_norm(h, embd_norm_w_, embd_norm_b_);
  const Tensor pos = Tensor::from_vector(positions, Shape{N});
  RopeOptions ro;
  ro.seq_axis = -3;  // [1, N, heads, D]
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (const Layer& L : layers_) {
    Tensor q, k, v;
    if (L.qkv.defined()) {
      const Tensor qkv = linear(h, L.qkv);
      q = slice(qkv, 1, 0, H);
      k = slice(qkv, 1, H, 2 * H);
      v = slice(qkv, 1, 2 * H, 3 * H);
    } else {
      q = lin(h, L.q, L.q_b);
      k = lin(h, L.k, L.k_b);
      v = lin(h, L.v, L.v_b);
    }
    q = reshape(q.contiguous(), {1, N, heads, D});
    k = reshape(k.contiguous(), {1, N, heads, D});
    v = reshape(v.contiguous(), {N, heads, D});
    if (inv_freq_.defined()) {
      q = rope(q, pos, inv_freq_, ro);
      k = rope(k, pos, inv_freq_, ro);
    }
    q = reshape(q, {N, heads, D});
    k = reshape(k, {N, heads, D});
    std::vector<Tensor> outs;
    int64_t off = 0;
    for (const auto& seq : ids) {
      const int64_t len = static_cast<int64_t>(seq.size());
      auto heads_first = [&](const Tensor& t) { return transpose(slice(t, 0, off, off + len), 0, 1); };  // [heads, len, D]
      const Tensor scores = mul(matmul(heads_first(q), transpose(heads_first(k), 1, 2)), scale);
      const Tensor a = matmul(softmax(scores, -1), heads_first(v));  // [heads, len, D]
      outs.push_back(reshape(transpose(a, 0, 1).contiguous(), {len, H}));
      off += len;
    }
    const Tensor attn = outs.size() == 1 ? outs[0] : concat(outs, 0);
    h = layer_norm(add(h, lin(attn, L.o, L.o_b)), L.attn_norm_w, L.attn_norm_b);
    Tensor up = lin(h, L.up, L.up_b);
    if (cfg_.activation == "swiglu")
      up = mul(silu(linear(h, L.gate)), up);
    else if (cfg_.activation == "gelu_tanh")
      up = gelu(up, true);
    else if (cfg_.activation == "relu")
      up = relu(up);
    else
      up = gelu(up);
    h = layer_norm(add(h, lin(up, L.down, L.down_b)), L.out_norm_w, L.out_norm_b);
  }
  std::vector<Tensor> out;
  int64_t off = 0;
  for (const auto& seq : ids) {
    const int64_t len = static_cast<int64_t>(seq.size());
    out.push_back(slice(h, 0, off, off + len).contiguous());
    off += len;
  }
  return out;
}

Tensor Encoder::classify(const Tensor& hidden) const {
  if (!classifier_.defined()) throw Error(ErrorCode::kUnsupported, cfg_.source + ": the model has no classifier head");
  Tensor x = slice(hidden, 0, 0, 1);  // the [CLS] row
  if (pooler_.defined()) x = tanh(lin(x, pooler_, pooler_b_));
  return reshape(lin(x, classifier_, classifier_b_), {cfg_.num_labels});
}

}  // namespace spore::nlp::models
