// The mixture-of-experts block (moe.h, NOTE [Mixture of experts]).
#include "nlp/models/moe.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/gguf_writer.h"
#include "spore/ops.h"

namespace spore::nlp::models {

namespace {

// "{expert}" replaced by the number (Hugging Face's per-expert tensor names).
std::string expert_name(const std::string& pattern, int64_t expert) {
  std::string s = pattern;
  const auto at = s.find("{expert}");
  if (at != std::string::npos) s.replace(at, 8, std::to_string(expert));
  return s;
}

// The experts of one token's row of scores: `sel` orders them (scores plus any selection bias),
// the group limit first keeping only the experts of the best groups.
std::vector<int32_t> top_experts(std::vector<float> sel, const MoeOptions& o) {
  const int64_t E = o.experts;
  if (o.groups > 1) {
    const int64_t per = E / o.groups;
    std::vector<float> best(static_cast<size_t>(o.groups), -std::numeric_limits<float>::infinity());
    for (int64_t e = 0; e < E; ++e) best[static_cast<size_t>(e / per)] = std::max(best[static_cast<size_t>(e / per)], sel[static_cast<size_t>(e)]);
    std::vector<int64_t> g(static_cast<size_t>(o.groups));
    std::iota(g.begin(), g.end(), 0);
    std::stable_sort(g.begin(), g.end(), [&](int64_t a, int64_t b) { return best[static_cast<size_t>(a)] > best[static_cast<size_t>(b)]; });
    std::vector<bool> keep(static_cast<size_t>(o.groups), false);
    for (int64_t i = 0; i < o.top_groups; ++i) keep[static_cast<size_t>(g[static_cast<size_t>(i)])] = true;
    for (int64_t e = 0; e < E; ++e)
      if (!keep[static_cast<size_t>(e / per)]) sel[static_cast<size_t>(e)] = -std::numeric_limits<float>::infinity();
  }
  std::vector<int32_t> idx(static_cast<size_t>(E));
  std::iota(idx.begin(), idx.end(), 0);
  // Highest first; equal scores keep the lower index first.
  std::stable_sort(idx.begin(), idx.end(), [&](int32_t a, int32_t b) { return sel[static_cast<size_t>(a)] > sel[static_cast<size_t>(b)]; });
  idx.resize(static_cast<size_t>(o.top_k));
  return idx;
}

}  // namespace

Routing route(const std::vector<float>& logits, int64_t n, const MoeOptions& o, const std::vector<float>& bias) {
  const int64_t E = o.experts, K = o.top_k;
  if (E <= 0 || K <= 0 || K > E || static_cast<int64_t>(logits.size()) != n * E ||
      (!bias.empty() && static_cast<int64_t>(bias.size()) != E))
    throw Error(ErrorCode::kInternal, "moe route: " + std::to_string(K) + " of " + std::to_string(E) +
                                          " experts over router logits of " + std::to_string(logits.size()));
  Routing r;
  r.experts.reserve(static_cast<size_t>(n * K));
  r.weights.reserve(static_cast<size_t>(n * K));
  std::vector<float> p(static_cast<size_t>(E));
  for (int64_t t = 0; t < n; ++t) {
    const float* l = logits.data() + t * E;
    if (o.gating == Gating::kSoftmax) {
      const float m = *std::max_element(l, l + E);
      double sum = 0;
      for (int64_t e = 0; e < E; ++e) sum += std::exp(static_cast<double>(l[e]) - m);
      for (int64_t e = 0; e < E; ++e) p[static_cast<size_t>(e)] = static_cast<float>(std::exp(static_cast<double>(l[e]) - m) / sum);
    } else {
      for (int64_t e = 0; e < E; ++e) p[static_cast<size_t>(e)] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(l[e]))));
    }
    std::vector<float> sel = p;
    for (size_t e = 0; e < bias.size(); ++e) sel[e] += bias[e];
    const std::vector<int32_t> chosen = top_experts(std::move(sel), o);
    float sum = 0;
    for (int32_t e : chosen) {
      if (e < 0 || e >= E)
        throw Error(ErrorCode::kInternal, "moe route: expert index " + std::to_string(e) + " is outside the table of " +
                                              std::to_string(E));
      sum += p[static_cast<size_t>(e)];
    }
    for (int32_t e : chosen) {
      float w = p[static_cast<size_t>(e)];
      if (o.normalize) w /= sum;
      r.experts.push_back(e);
      r.weights.push_back(static_cast<float>(w * o.scale));
    }
  }
  return r;
}

MoeWeights load_moe(WeightStore& ws, const WeightNames& n, bool gguf, int64_t l, const MoeOptions& o, int64_t H) {
  auto nm = [&](const TensorName& t) { return layer_name(gguf ? t.gguf : t.hf, l); };
  const int64_t E = o.experts, F = o.expert_ffn;
  MoeWeights w;
  w.router = ws.matrix(nm(n.router), E, H);
  if (!nm(n.expert_bias).empty() && ws.contains(nm(n.expert_bias))) w.selection_bias = ws.vector(nm(n.expert_bias), E);
  if (gguf) {
    w.gate = ws.stacked(nm(n.gate_exps), E, F, H);
    w.up = ws.stacked(nm(n.up_exps), E, F, H);
    w.down = ws.stacked(nm(n.down_exps), E, H, F);
  } else {
    for (int64_t e = 0; e < E; ++e) {
      w.gate.push_back(ws.matrix(expert_name(nm(n.gate_exps), e), F, H));
      w.up.push_back(ws.matrix(expert_name(nm(n.up_exps), e), F, H));
      w.down.push_back(ws.matrix(expert_name(nm(n.down_exps), e), H, F));
    }
  }
  if (o.shared_ffn > 0) {
    w.shared_gate_proj = ws.matrix(nm(n.gate_shexp), o.shared_ffn, H);
    w.shared_up = ws.matrix(nm(n.up_shexp), o.shared_ffn, H);
    w.shared_down = ws.matrix(nm(n.down_shexp), H, o.shared_ffn);
    if (o.shared_gate) w.shared_gate = ws.matrix(nm(n.shexp_gate), 1, H);
  }
  return w;
}

Tensor moe(const MoeWeights& w, const MoeOptions& o, const Tensor& y, bool ggml) {
  const int64_t N = y.size(0), H = y.size(1), K = o.top_k;
  const std::vector<float> logits = linear(y, w.router, ggml).contiguous().to_vector<float>();
  const std::vector<float> bias = w.selection_bias.defined() ? w.selection_bias.to_vector<float>() : std::vector<float>{};
  const Routing r = route(logits, N, o, bias);
  // The tokens routed to each expert, in token order, with their weights.
  std::vector<std::vector<int64_t>> tokens(static_cast<size_t>(o.experts));
  std::vector<std::vector<float>> weights(static_cast<size_t>(o.experts));
  for (int64_t i = 0; i < N * K; ++i) {
    const auto e = static_cast<size_t>(r.experts[static_cast<size_t>(i)]);
    tokens[e].push_back(i / K);
    weights[e].push_back(r.weights[static_cast<size_t>(i)]);
  }
  std::vector<float> out(static_cast<size_t>(N * H), 0.0f);
  // Experts in index order, each adding its weighted rows (transformers' index_add_ order).
  for (size_t e = 0; e < tokens.size(); ++e) {
    if (tokens[e].empty()) continue;
    const int64_t n = static_cast<int64_t>(tokens[e].size());
    const Tensor x = n == N && N == 1 ? y : index_select(y, 0, Tensor::from_vector(tokens[e], Shape{n}));
    const Tensor h = mul(silu(linear(x, w.gate[e], ggml)), linear(x, w.up[e], ggml));
    const Tensor o_e = linear(h, w.down[e], ggml).contiguous();
    const float* src = o_e.data<float>();
    for (int64_t i = 0; i < n; ++i) {
      float* dst = out.data() + tokens[e][static_cast<size_t>(i)] * H;
      const float g = weights[e][static_cast<size_t>(i)];
      for (int64_t c = 0; c < H; ++c) dst[c] += g * src[i * H + c];
    }
  }
  Tensor result = Tensor::from_vector(out, Shape{N, H});
  if (o.shared_ffn > 0) {
    Tensor s = linear(mul(silu(linear(y, w.shared_gate_proj, ggml)), linear(y, w.shared_up, ggml)), w.shared_down, ggml);
    if (o.shared_gate) s = mul(s, sigmoid(linear(y, w.shared_gate, ggml)));  // [N, 1] broadcast over hidden
    result = add(result, s);
  }
  return result;
}

void read_moe_hf(const nlohmann::json& cfg, ModelConfig& c, const char* experts_key, const char* ffn_key) {
  const std::string& src = c.source;
  c.extra["num_experts"] = static_cast<double>(json_int(cfg, experts_key, src));
  c.extra["num_experts_per_tok"] = static_cast<double>(json_int(cfg, "num_experts_per_tok", src));
  c.extra["moe_intermediate_size"] = static_cast<double>(json_int(cfg, ffn_key, src));
  const auto norm = cfg.find("norm_topk_prob");
  if (norm != cfg.end() && !norm->is_null() && !norm->is_boolean()) config_fail(src, "norm_topk_prob must be true or false");
  c.extra["norm_topk_prob"] = norm != cfg.end() && norm->is_boolean() && norm->get<bool>() ? 1 : 0;
  c.extra["shared_expert_intermediate_size"] = static_cast<double>(json_int(cfg, "shared_expert_intermediate_size", src, 0));
}

void refuse_dense_layers(const nlohmann::json& cfg, const ModelConfig& c) {
  const auto only = cfg.find("mlp_only_layers");
  if (only != cfg.end() && !only->is_null() && !(only->is_array() && only->empty()))
    throw Error(ErrorCode::kUnsupported, c.source + ": mlp_only_layers (dense layers among the experts') is not supported");
  if (json_int(cfg, "decoder_sparse_step", c.source, 1) != 1)
    throw Error(ErrorCode::kUnsupported, c.source + ": decoder_sparse_step other than 1 is not supported");
}

void read_moe_gguf(const GgufFile& g, ModelConfig& c) {
  const std::string p = c.architecture + ".";
  c.extra["num_experts"] = static_cast<double>(g.get_int(p + "expert_count"));
  c.extra["num_experts_per_tok"] = static_cast<double>(g.get_int(p + "expert_used_count"));
  const std::string ffn = p + "expert_feed_forward_length";
  c.extra["moe_intermediate_size"] = static_cast<double>(g.contains(ffn) ? g.get_int(ffn) : c.intermediate_size);
  const std::string shared = p + "expert_shared_feed_forward_length";
  c.extra["shared_expert_intermediate_size"] = static_cast<double>(g.contains(shared) ? g.get_int(shared) : 0);
}

namespace {
int64_t count(const ModelConfig& c, const char* key) {
  const double v = extra(c, key);
  return v >= 0x1p40 || v < 0 ? -1 : static_cast<int64_t>(v);
}
}  // namespace

void validate_moe(const ModelConfig& c) {
  const int64_t E = count(c, "num_experts"), K = count(c, "num_experts_per_tok");
  if (E <= 0 || E > 65536) config_fail(c.source, "the expert count (num_experts / expert_count) must be 1..65536, got " + std::to_string(E));
  if (K <= 0 || K > E)
    config_fail(c.source, "num_experts_per_tok (expert_used_count) " + std::to_string(K) +
                              " must pick 1.." + std::to_string(E) + " of the experts");
  if (count(c, "moe_intermediate_size") <= 0 || count(c, "moe_intermediate_size") > (int64_t{1} << 31))
    config_fail(c.source, "moe_intermediate_size (expert_feed_forward_length) must be a positive size");
  if (count(c, "shared_expert_intermediate_size") < 0 || count(c, "shared_expert_intermediate_size") > (int64_t{1} << 31))
    config_fail(c.source, "shared_expert_intermediate_size must be a size");
}

void write_moe_gguf(const ModelConfig& c, const std::string& arch, GgufWriter& w, bool widths) {
  const std::string p = arch + ".";
  w.set_u32(p + "expert_count", static_cast<uint32_t>(count(c, "num_experts")));
  w.set_u32(p + "expert_used_count", static_cast<uint32_t>(count(c, "num_experts_per_tok")));
  if (!widths) return;
  w.set_u32(p + "expert_feed_forward_length", static_cast<uint32_t>(count(c, "moe_intermediate_size")));
  if (count(c, "shared_expert_intermediate_size") > 0)
    w.set_u32(p + "expert_shared_feed_forward_length", static_cast<uint32_t>(count(c, "shared_expert_intermediate_size")));
}

MoeOptions moe_options(const ModelConfig& c) {
  MoeOptions o;
  o.experts = count(c, "num_experts");
  o.top_k = count(c, "num_experts_per_tok");
  o.expert_ffn = count(c, "moe_intermediate_size");
  o.shared_ffn = count(c, "shared_expert_intermediate_size");
  o.normalize = extra(c, "norm_topk_prob") != 0;
  return o;
}

}  // namespace spore::nlp::models
