// The LoRA training model (include/spore/nlp/finetune.h, NOTE [LoRA training]): the engine's own
// layer composition (the family's DecoderSpec and the weights models::load_layer reads, frozen in
// their stored type) run by the training blocks of train_blocks.cc, with adapters as Parameters.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "nlp/finetune/train_blocks.h"
#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/autograd.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/nlp/finetune.h"
#include "spore/ops.h"

namespace spore::nlp {

namespace fs = std::filesystem;

struct LoraModel::Impl {
  ModelConfig cfg;
  const models::Family* family = nullptr;
  bool gguf = false;
  models::DecoderSpec spec;
  models::BlockDims dims;
  Weight embed, lm_head;
  Tensor final_norm;
  std::vector<models::LayerWeights> layers;
  Tensor short_inv, long_inv;
  double short_scale = 1, long_scale = 1;
  bool interleaved = false;
  std::map<double, Tensor> layer_inv;
  // Adapter indices per layer, by target.
  std::vector<std::map<std::string, size_t>> index;

  lora_blocks::RopeTables rope_for(int64_t layer, int64_t length) const;
  lora_blocks::LayerAdapters adapters_of(const std::vector<Tensor>& values, int64_t layer, const LoraConfig& lc,
                                      uint64_t key) const;
  // Sequences packed into one forward (NOTE [Packed training batches]).
  struct Packed {
    std::vector<int32_t> ids;       // every sequence's ids, one after another
    Tensor pos;                     // int64 [N]: each sequence's positions from 0
    std::vector<int64_t> segments;  // the sequences' lengths
    std::vector<int64_t> rows, next;  // the rows that predict a target token, and that token
  };
  Packed pack(const std::vector<TrainExample>& batch) const;
  Tensor embed_packed(const Packed& p) const;
  Tensor layer_forward(int64_t l, const Tensor& h, const Packed& p, const lora_blocks::LayerAdapters& a) const;
  Tensor head_nll(const Tensor& h, const Packed& p) const;
};



namespace {

std::vector<float> inv_freq_with(const ModelConfig& c, int64_t context, const Tensor& divisors, double* scale) {
  std::vector<float> inv = rope_inv_freq(c, context, scale);
  if (divisors.defined()) {
    const auto f = divisors.to_vector<float>();
    for (size_t i = 0; i < inv.size() && i < f.size(); ++i) {
      if (!(f[i] > 0)) throw Error(ErrorCode::kFormat, c.source + ": rope frequency factors must be positive");
      inv[i] /= f[i];
    }
  }
  return inv;
}

Tensor vec(const std::vector<float>& v) { return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}); }

// The compositions the training blocks run: everything but latent attention, fused projections
// and mixtures of experts (kUnsupported naming the family and the block).
void check_trainable(const ModelConfig& c, const models::DecoderSpec& spec) {
  for (size_t l = 0; l < spec.layers.size(); ++l) {
    const models::LayerSpec& s = spec.layers[l];
    const char* what = s.attention.latent.kv_lora_rank > 0 ? "latent attention"
                       : s.attention.fused_qkv             ? "a fused qkv projection"
                       : s.mlp.fused_gate_up               ? "a fused gate_up projection"
                       : s.moe.experts > 0                 ? "a mixture of experts"
                                                           : nullptr;
    if (what)
      throw Error(ErrorCode::kUnsupported, "finetune: " + c.source + ": layer " + std::to_string(l) + " of the " +
                                               c.family + " family uses " + what +
                                               ", which the LoRA training forward does not run yet; fine-tune a "
                                               "llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3, granite or olmo2 model");
  }
}

}  // namespace

std::vector<std::string> parse_lora_targets(const std::string& text) {
  if (text == "all" || text == "all-linear") return kLoraTargetNames;
  std::vector<std::string> out;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    std::string t = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    while (!t.empty() && t.front() == ' ') t.erase(t.begin());
    while (!t.empty() && t.back() == ' ') t.pop_back();
    if (std::find(kLoraTargetNames.begin(), kLoraTargetNames.end(), t) == kLoraTargetNames.end())
      throw Error(ErrorCode::kValue, "--lora-targets: '" + t + "' is not a projection; use a comma-separated list of "
                                     "q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (or all)");
    if (seen.insert(t).second) out.push_back(t);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string LoraModel::peft_module(int64_t layer, const std::string& target) {
  const bool attn = target == "q_proj" || target == "k_proj" || target == "v_proj" || target == "o_proj";
  return "base_model.model.model.layers." + std::to_string(layer) + (attn ? ".self_attn." : ".mlp.") + target;
}

LoraModel::~LoraModel() = default;
const ModelConfig& LoraModel::model_config() const { return impl_->cfg; }
bool LoraModel::gguf_layout() const { return impl_->gguf; }

std::vector<Parameter> LoraModel::parameters() const {
  std::vector<Parameter> p;
  for (const TrainableLora& a : adapters_) {
    p.push_back(a.a);
    p.push_back(a.b);
  }
  return p;
}

std::unique_ptr<LoraModel> LoraModel::load(const fs::path& path, const LoraConfig& lc) {
  if (lc.rank < 1) throw Error(ErrorCode::kValue, "finetune: --lora-rank must be at least 1, got " + std::to_string(lc.rank));
  if (!(lc.alpha > 0)) throw Error(ErrorCode::kValue, "finetune: --lora-alpha must be positive");
  if (!(lc.dropout >= 0 && lc.dropout < 1)) throw Error(ErrorCode::kValue, "finetune: --lora-dropout must be in [0, 1)");
  if (lc.targets.empty()) throw Error(ErrorCode::kValue, "finetune: no --lora-targets");
  std::error_code ec;
  auto impl = std::make_unique<Impl>();
  std::unique_ptr<WeightStore> ws;
  if (fs::is_directory(path, ec) && fs::exists(path / "config.json", ec)) {
    impl->cfg = ModelConfig::from_hf_json(path / "config.json");
    ws = open_safetensors_weights(path);
  } else {
    fs::path file = path;
    if (fs::is_directory(path, ec)) {
      std::vector<fs::path> g;
      for (const auto& e : fs::directory_iterator(path, ec))
        if (e.path().extension() == ".gguf") g.push_back(e.path());
      if (g.size() != 1)
        throw Error(ErrorCode::kFormat, "finetune: " + path.string() + " holds no config.json and " +
                                            std::to_string(g.size()) + " .gguf files; name the model directory or .gguf file");
      file = g[0];
    } else if (!fs::exists(path, ec)) {
      throw Error(ErrorCode::kIO, "finetune: --model " + path.string() + ": no such file or directory");
    }
    auto g = std::make_shared<const GgufFile>(file);
    impl->cfg = ModelConfig::from_gguf(*g);
    ws = open_gguf_weights(g);
    impl->gguf = true;
  }
  Impl& m = *impl;
  m.family = models::find_family(m.cfg.family);
  if (!m.family) throw Error(ErrorCode::kUnsupported, "finetune: model family " + m.cfg.family + " is not built in");
  m.spec = m.family->decoder(m.cfg);
  check_trainable(m.cfg, m.spec);
  m.interleaved = m.gguf && m.family->gguf_interleaved_rope;
  const auto& n = m.family->names;
  auto nm = [&](const models::TensorName& t) { return models::layer_name(m.gguf ? t.gguf : t.hf, 0); };
  const int64_t H = m.cfg.hidden_size, V = m.cfg.vocab_size;
  m.dims = {H, m.cfg.num_heads, m.cfg.num_kv_heads, m.cfg.head_dim, m.cfg.v_head_dim, m.cfg.intermediate_size};
  m.embed = ws->matrix(nm(n.embed), V, H);
  m.final_norm = ws->vector(nm(n.final_norm), H);
  if (m.spec.final_norm.offset != 0) m.final_norm = add(m.final_norm, m.spec.final_norm.offset);
  const std::string head = nm(n.lm_head);
  if (ws->contains(head) && !(m.cfg.tie_word_embeddings && !m.gguf))
    m.lm_head = ws->matrix(head, V, H);
  else if (!m.cfg.tie_word_embeddings)
    m.lm_head = ws->matrix(head, V, H);  // throws naming the missing head
  else
    m.lm_head = m.embed;
  for (int64_t l = 0; l < m.cfg.num_layers; ++l)
    m.layers.push_back(models::load_layer(*ws, n, m.gguf, l, m.spec.layers[static_cast<size_t>(l)], m.dims));
  if (lc.bf16) {
    // NOTE [bf16 LoRA training]: the layers' float32 projections held as bfloat16 once, at load.
    for (models::LayerWeights& w : m.layers)
      for (Weight* p : {&w.q, &w.k, &w.v, &w.o, &w.gate, &w.up, &w.down})
        if (p->defined() && p->qtype == GgmlType::kF32 && p->data.dtype() == DType::kFloat32) {
          p->data = cast(p->data, DType::kBFloat16).contiguous();
          p->qtype = GgmlType::kBF16;
        }
  }
  Tensor div_short, div_long;
  if (m.gguf && ws->contains("rope_freqs.weight")) div_short = div_long = ws->vector("rope_freqs.weight", m.cfg.rope_dim / 2);
  if (m.gguf && ws->contains("rope_factors_short.weight")) div_short = ws->vector("rope_factors_short.weight", m.cfg.rope_dim / 2);
  if (m.gguf && ws->contains("rope_factors_long.weight")) div_long = ws->vector("rope_factors_long.weight", m.cfg.rope_dim / 2);
  m.short_inv = vec(inv_freq_with(m.cfg, 1, div_short, &m.short_scale));
  m.long_inv = vec(inv_freq_with(m.cfg, m.cfg.max_position_embeddings + 1, div_long, &m.long_scale));
  for (const models::LayerSpec& s : m.spec.layers)
    if (const double theta = s.attention.rope_theta; theta > 0 && !m.layer_inv.count(theta)) {
      ModelConfig own = m.cfg;
      own.rope_theta = theta;
      own.rope_scaling = {};
      m.layer_inv[theta] = vec(rope_inv_freq(own, 1, nullptr));
    }

  std::unique_ptr<LoraModel> out(new LoraModel());
  out->lora_ = lc;
  // A: Kaiming-uniform with a = sqrt(5) as PEFT (nn.init.kaiming_uniform_), whose bound is
  // 1 / sqrt(fan_in); B: zeros, so the adapted model starts as the base.
  uint64_t seed = lc.seed * 1000003ull + 17;
  m.index.resize(static_cast<size_t>(m.cfg.num_layers));
  for (int64_t l = 0; l < m.cfg.num_layers; ++l) {
    const models::LayerWeights& w = m.layers[static_cast<size_t>(l)];
    for (const std::string& t : kLoraTargetNames) {
      if (std::find(lc.targets.begin(), lc.targets.end(), t) == lc.targets.end()) continue;
      const Weight& base = t == "q_proj" ? w.q : t == "k_proj" ? w.k : t == "v_proj" ? w.v : t == "o_proj" ? w.o
                           : t == "gate_proj" ? w.gate : t == "up_proj" ? w.up : w.down;
      if (!base.defined()) continue;  // an ungated MLP has no gate_proj
      const double bound = 1.0 / std::sqrt(static_cast<double>(base.cols));
      TrainableLora a;
      a.layer = l;
      a.target = t;
      const std::string name = peft_module(l, t);
      a.a = Parameter(random_uniform({lc.rank, base.cols}, ++seed, -bound, bound), name + ".lora_A.weight");
      a.b = Parameter(zeros({base.rows, lc.rank}, DType::kFloat32), name + ".lora_B.weight");
      m.index[static_cast<size_t>(l)][t] = out->adapters_.size();
      out->adapters_.push_back(std::move(a));
    }
  }
  out->impl_ = std::move(impl);
  return out;
}

lora_blocks::RopeTables LoraModel::Impl::rope_for(int64_t layer, int64_t length) const {
  lora_blocks::RopeTables r;
  r.options.seq_axis = -3;  // [1, N, heads, D]
  r.options.interleaved = interleaved;
  const models::AttentionOptions& a = spec.layers[static_cast<size_t>(layer)].attention;
  if (a.rope_theta > 0) {
    r.inv = layer_inv.at(a.rope_theta);
    return r;
  }
  const int64_t original = cfg.rope_scaling.original_max_position > 0 ? cfg.rope_scaling.original_max_position
                                                                      : cfg.max_position_embeddings;
  const bool long_rope = cfg.rope_scaling.type == "longrope" && length > original;
  r.inv = long_rope ? long_inv : short_inv;
  r.options.scale = long_rope ? long_scale : short_scale;
  return r;
}

lora_blocks::LayerAdapters LoraModel::Impl::adapters_of(const std::vector<Tensor>& values, int64_t layer,
                                                     const LoraConfig& lc, uint64_t key) const {
  lora_blocks::LayerAdapters a;
  a.scaling = lc.scaling();
  a.dropout = lc.dropout;
  a.dropout_key = key;
  a.layer = layer;
  a.bf16 = lc.bf16;
  for (const auto& [t, i] : index[static_cast<size_t>(layer)]) a.ab[t] = {values[2 * i], values[2 * i + 1]};
  return a;
}

Tensor LoraModel::Impl::layer_forward(int64_t l, const Tensor& h, const Packed& p,
                                      const lora_blocks::LayerAdapters& a) const {
  const models::LayerWeights& L = layers[static_cast<size_t>(l)];
  const models::LayerSpec& S = spec.layers[static_cast<size_t>(l)];
  auto residual = [&](const Tensor& x, const Tensor& b) {
    return add(x, spec.residual_scale == 1.0 ? b : mul(b, spec.residual_scale));
  };
  const Tensor x = S.pre_norms ? models::norm(h, L.attn_norm, S.norm, false) : h;
  const int64_t longest = p.segments.empty() ? h.size(0) : *std::max_element(p.segments.begin(), p.segments.end());
  Tensor att = lora_blocks::train_attention(L, S.attention, dims, x, p.pos, rope_for(l, longest),
                                            1.0 / std::sqrt(static_cast<double>(cfg.head_dim)), a, p.segments);
  if (S.post_norms) att = models::norm(att, L.post_attn_norm, S.norm, false);
  const Tensor h1 = residual(h, att);
  const Tensor y = S.pre_norms ? models::norm(h1, L.ffn_norm, S.norm, false) : h1;
  Tensor mlp = lora_blocks::train_mlp(L, S.mlp, y, a);
  if (S.post_norms) mlp = models::norm(mlp, L.post_ffn_norm, S.norm, false);
  return residual(h1, mlp);
}

// The targets' negative log-likelihood summed: only the rows that predict a target token go
// through the final norm and the head (a chat's prompt tokens never make logits).
Tensor LoraModel::Impl::head_nll(const Tensor& h, const Packed& p) const {
  if (p.rows.empty()) return zeros({}, DType::kFloat32);
  const int64_t R = static_cast<int64_t>(p.rows.size());
  Tensor out = models::norm(index_select(h, 0, Tensor::from_vector(p.rows, Shape{R})), final_norm, spec.final_norm, false);
  if (spec.head_scale != 1.0) out = mul(out, spec.head_scale);
  Tensor logits = linear(out, lm_head);
  if (spec.logit_softcap > 0) logits = mul(tanh(mul(logits, 1.0 / spec.logit_softcap)), spec.logit_softcap);
  const Tensor picked = gather(log_softmax(logits, -1), 1, Tensor::from_vector(p.next, Shape{R, 1}));
  return mul(sum(picked), -1.0);
}

namespace {

void check_example(const TrainExample& ex, const ModelConfig& c) {
  if (ex.ids.empty() || ex.target.size() != ex.ids.size())
    throw Error(ErrorCode::kValue, "finetune: an example needs ids and one target flag per id");
  if (static_cast<int64_t>(ex.ids.size()) > c.max_position_embeddings)
    throw Error(ErrorCode::kValue, "finetune: an example of " + std::to_string(ex.ids.size()) +
                                       " tokens exceeds the model's " + std::to_string(c.max_position_embeddings) +
                                       " positions");
  for (int32_t id : ex.ids)
    if (id < 0 || id >= c.vocab_size)
      throw Error(ErrorCode::kValue, "finetune: token id " + std::to_string(id) + " is outside the vocabulary");
}

}  // namespace

LoraModel::Impl::Packed LoraModel::Impl::pack(const std::vector<TrainExample>& batch) const {
  if (batch.empty()) throw Error(ErrorCode::kValue, "finetune: an empty batch of examples");
  Packed p;
  std::vector<int64_t> pos;
  for (const TrainExample& ex : batch) {
    check_example(ex, cfg);
    const int64_t base = static_cast<int64_t>(p.ids.size());
    for (size_t i = 0; i < ex.ids.size(); ++i) {
      pos.push_back(static_cast<int64_t>(i));
      if (i > 0 && ex.target[i]) {
        p.rows.push_back(base + static_cast<int64_t>(i) - 1);
        p.next.push_back(ex.ids[i]);
      }
    }
    p.ids.insert(p.ids.end(), ex.ids.begin(), ex.ids.end());
    p.segments.push_back(static_cast<int64_t>(ex.ids.size()));
  }
  p.pos = Tensor::from_vector(pos, Shape{static_cast<int64_t>(pos.size())});
  return p;
}

Tensor LoraModel::Impl::embed_packed(const Packed& p) const {
  Tensor h = embed_rows(embed, p.ids);
  return spec.embed_scale != 1.0 ? mul(h, spec.embed_scale) : h;
}

Tensor LoraModel::nll_sum(const TrainExample& ex, uint64_t dropout_key) const {
  return batch_nll_sum({ex}, dropout_key);
}

Tensor LoraModel::batch_nll_sum(const std::vector<TrainExample>& batch, uint64_t dropout_key) const {
  const Impl& m = *impl_;
  const Impl::Packed p = m.pack(batch);
  std::vector<Tensor> values;
  for (const Parameter& q : parameters()) values.push_back(q.value());
  Tensor h = m.embed_packed(p);
  for (int64_t l = 0; l < m.cfg.num_layers; ++l) h = m.layer_forward(l, h, p, m.adapters_of(values, l, lora_, dropout_key));
  return m.head_nll(h, p);
}

Tensor LoraModel::logits(const std::vector<int32_t>& ids) const {
  const Impl& m = *impl_;
  LoraConfig no_dropout = lora_;
  no_dropout.dropout = 0;
  std::vector<Tensor> values;
  for (const Parameter& p : parameters()) values.push_back(p.value());
  const Impl::Packed p = m.pack({TrainExample{ids, std::vector<uint8_t>(ids.size(), 0), 0}});
  Tensor h = m.embed_packed(p);
  for (int64_t l = 0; l < m.cfg.num_layers; ++l) h = m.layer_forward(l, h, p, m.adapters_of(values, l, no_dropout, 0));
  Tensor out = models::norm(h, m.final_norm, m.spec.final_norm, false);
  if (m.spec.head_scale != 1.0) out = mul(out, m.spec.head_scale);
  Tensor lg = linear(out, m.lm_head);
  if (m.spec.logit_softcap > 0) lg = mul(tanh(mul(lg, 1.0 / m.spec.logit_softcap)), m.spec.logit_softcap);
  return lg;
}

double LoraModel::nll_sum_and_grads_checkpointed(const TrainExample& ex, double scale, uint64_t dropout_key,
                                                 std::vector<Tensor>& grads) const {
  return batch_nll_sum_and_grads_checkpointed({ex}, scale, dropout_key, grads);
}

double LoraModel::batch_nll_sum_and_grads_checkpointed(const std::vector<TrainExample>& batch, double scale,
                                                       uint64_t dropout_key, std::vector<Tensor>& grads) const {
  const Impl& m = *impl_;
  const Impl::Packed pk = m.pack(batch);
  const std::vector<Parameter> params = parameters();
  std::vector<Tensor> values;
  for (const Parameter& p : params) values.push_back(p.value());
  if (grads.size() != params.size()) {
    grads.clear();
    for (const Tensor& v : values) grads.push_back(zeros_like(v));
  }
  const int64_t L = m.cfg.num_layers;
  // Forward without a tape, keeping each layer's input only.
  std::vector<Tensor> inputs;
  {
    NoGradGuard no_grad;
    Tensor h = m.embed_packed(pk);
    for (int64_t l = 0; l < L; ++l) {
      inputs.push_back(h);
      h = m.layer_forward(l, h, pk, m.adapters_of(values, l, lora_, dropout_key));
    }
    inputs.push_back(h);
  }
  // The head's loss and its gradient with respect to the last hidden state.
  auto head = value_and_grad([&](const std::vector<Tensor>& x) { return mul(m.head_nll(x[0], pk), scale); }, 0);
  const ValueAndGrad hv = head({inputs.back()});
  Tensor g = hv.input_grads[0];
  // Then layer by layer, last first: recompute the layer under a tape and pull g through it.
  for (int64_t l = L - 1; l >= 0; --l) {
    const auto& idx = m.index[static_cast<size_t>(l)];
    std::vector<int> order;  // parameter positions of this layer's adapters
    for (const auto& [t, i] : idx) {
      order.push_back(static_cast<int>(2 * i));
      order.push_back(static_cast<int>(2 * i + 1));
    }
    GradPosition gp = GradPosition::none();
    gp.positions.push_back(0);
    for (size_t j = 0; j < order.size(); ++j) gp.positions.push_back(static_cast<int>(j) + 1);
    auto fn = [&](const std::vector<Tensor>& x) {
      std::vector<Tensor> vals = values;
      for (size_t j = 0; j < order.size(); ++j) vals[static_cast<size_t>(order[j])] = x[j + 1];
      return m.layer_forward(l, x[0], pk, m.adapters_of(vals, l, lora_, dropout_key));
    };
    std::vector<Tensor> in = {inputs[static_cast<size_t>(l)]};
    for (int p : order) in.push_back(values[static_cast<size_t>(p)]);
    const ValueAndGrad r = value_and_grad(fn, gp, {}, g)(in);
    for (size_t j = 0; j < order.size(); ++j)
      grads[static_cast<size_t>(order[j])] = add(grads[static_cast<size_t>(order[j])], r.input_grads[j + 1]);
    g = r.input_grads[0];
  }
  return hv.value.item<double>() / scale;
}

}  // namespace spore::nlp
