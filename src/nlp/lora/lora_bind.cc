// An adapter's pairs matched to a model (NOTE [LoRA adapters]): names through the family's own
// WeightNames table (src/nlp/models/<family>.cc, the table the loader and spore convert read),
// shapes against the config, llama's q/k row order between the formats.
#include <cctype>
#include <set>

#include "nlp/lora/lora_files.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/nlp/lora.h"
#include "spore/ops.h"

namespace spore::nlp::lora {

using models::TensorName;
using models::WeightNames;

// The table entry each projection is, in the family's names.
const TensorName& projection_tensor(const WeightNames& n, LoraProjection p) {
  switch (p) {
    case LoraProjection::kQ: return n.q;
    case LoraProjection::kK: return n.k;
    case LoraProjection::kV: return n.v;
    case LoraProjection::kO: return n.o;
    case LoraProjection::kGate: return n.gate;
    case LoraProjection::kUp: return n.up;
    case LoraProjection::kDown: return n.down;
    case LoraProjection::kQkv: return n.qkv;
    case LoraProjection::kGateUp: return n.gate_up;
    case LoraProjection::kCount: break;
  }
  throw Error(ErrorCode::kInternal, "lora: no such projection");
}

namespace {

constexpr size_t kCount = static_cast<size_t>(LoraProjection::kCount);

// `name` spelled by `pattern`, whose {layer} / {expert} stand for decimal numbers; *layer gets
// the layer's.
bool matches(const std::string& pattern, const std::string& name, int64_t* layer) {
  if (pattern.empty()) return false;
  size_t pi = 0, ni = 0;
  while (pi < pattern.size()) {
    const bool is_layer = pattern.compare(pi, 7, "{layer}") == 0, is_expert = pattern.compare(pi, 8, "{expert}") == 0;
    if (is_layer || is_expert) {
      size_t digits = 0;
      int64_t v = 0;
      while (ni < name.size() && std::isdigit(static_cast<unsigned char>(name[ni])) && digits < 9) {
        v = v * 10 + (name[ni] - '0');
        ++ni;
        ++digits;
      }
      if (digits == 0) return false;
      if (is_layer && layer) *layer = v;
      pi += is_layer ? 7 : 8;
      continue;
    }
    if (ni >= name.size() || name[ni] != pattern[pi]) return false;
    ++pi;
    ++ni;
  }
  return ni == name.size();
}

// The module a table name belongs to: "model.layers.{layer}.self_attn.q_proj.weight" -> "q_proj".
std::string module_of(const std::string& hf) {
  std::string s = hf;
  for (const char* tail : {".weight", ".bias"})
    if (s.ends_with(tail)) s.resize(s.size() - std::string(tail).size());
  const auto dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

// Whether the decoder runs projection p of a layer through the adapter hook (blocks.cc,
// decoder.cc): not the latent attention's, not a mixture of experts', only the fused or the split
// form the layer has.
bool adaptable(const models::LayerSpec& s, LoraProjection p) {
  const bool latent = s.attention.latent.kv_lora_rank > 0, moe = s.moe.experts > 0;
  switch (p) {
    case LoraProjection::kQ: case LoraProjection::kK: case LoraProjection::kV: return !latent && !s.attention.fused_qkv;
    case LoraProjection::kQkv: return !latent && s.attention.fused_qkv;
    case LoraProjection::kO: return true;
    case LoraProjection::kGate: return !moe && !s.mlp.fused_gate_up && s.mlp.gated;
    case LoraProjection::kUp: return !moe && !s.mlp.fused_gate_up;
    case LoraProjection::kDown: return !moe;
    case LoraProjection::kGateUp: return !moe && s.mlp.fused_gate_up;
    case LoraProjection::kCount: break;
  }
  return false;
}

// [out, in] of projection p.
std::pair<int64_t, int64_t> dims(const ModelConfig& c, LoraProjection p) {
  const int64_t H = c.hidden_size, D = c.head_dim, Hq = c.num_heads, Hkv = c.num_kv_heads, F = c.intermediate_size;
  switch (p) {
    case LoraProjection::kQ: return {Hq * D, H};
    case LoraProjection::kK: case LoraProjection::kV: return {Hkv * D, H};
    case LoraProjection::kO: return {H, Hq * c.v_head_dim};
    case LoraProjection::kGate: case LoraProjection::kUp: return {F, H};
    case LoraProjection::kDown: return {H, F};
    case LoraProjection::kQkv: return {(Hq + 2 * Hkv) * D, H};
    case LoraProjection::kGateUp: return {2 * F, H};
    case LoraProjection::kCount: break;
  }
  return {0, 0};
}

// llama.cpp's LlamaModel.permute on the output rows (B's rows: the converter permutes only B):
// per head, Hugging Face's half-split row s * D/2 + i is the GGUF file's row 2 i + s.
Tensor reorder_rows(const Tensor& b, int64_t heads, bool to_gguf) {
  const int64_t rows = b.size(0), D = rows / heads, half = D / 2;
  std::vector<int64_t> idx(static_cast<size_t>(rows));
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t s = 0; s < 2; ++s)
      for (int64_t i = 0; i < half; ++i) {
        const int64_t hf = h * D + s * half + i, gg = h * D + 2 * i + s;
        idx[static_cast<size_t>(to_gguf ? gg : hf)] = to_gguf ? hf : gg;
      }
  return index_select(b, 0, Tensor::from_vector(idx, Shape{rows})).contiguous();
}

std::string shape_str(const Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.ndim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

}  // namespace

LoraAdapter bind_adapter(RawAdapter raw, const std::vector<std::string>& targets, const ModelConfig& c, bool gguf_base) {
  const models::Family* fam = models::find_family(c.family);
  if (!fam) throw Error(ErrorCode::kUnsupported, "lora: model family " + c.family + " is not built in");
  const bool gguf_names = raw.format == "gguf";
  const std::string& src = raw.source;
  const WeightNames& names = fam->names;
  auto spelled = [&](const TensorName& t) -> const std::string& { return gguf_names ? t.gguf : t.hf; };
  std::string adapted;  // for messages: the projections the family's layers take adapters on
  for (size_t p = 0; p < kCount; ++p) {
    const std::string& s = spelled(projection_tensor(names, static_cast<LoraProjection>(p)));
    if (!s.empty()) adapted += (adapted.empty() ? "" : ", ") + (gguf_names ? s : module_of(s));
  }
  if (gguf_names) {
    const std::string base_arch =
        gguf_base ? c.architecture : !fam->gguf_arch.empty() ? fam->gguf_arch : fam->writes.arch;
    if (raw.arch != base_arch)
      throw Error(ErrorCode::kValue, src + ": the adapter is for architecture \"" + raw.arch + "\" but the model (" +
                                         c.source + ") is \"" + base_arch + "\"; use an adapter trained on this model");
  }
  if (!targets.empty()) {
    std::set<std::string> modules;
    for (const TensorName* t : names.all())
      if (!t->hf.empty()) modules.insert(module_of(t->hf));
    for (const std::string& t : targets) {
      const auto dot = t.rfind('.');
      const std::string m = dot == std::string::npos ? t : t.substr(dot + 1);
      if (!modules.count(m))
        throw Error(ErrorCode::kUnsupported, raw.config_source + ": target module \"" + t + "\" is not a module of a " + fam->name +
                                                 " model; adapters apply to " + adapted);
    }
  }
  const bool base_permuted = gguf_base && fam->gguf_interleaved_rope;
  const models::Family* adapter_fam = gguf_names ? models::find_family_gguf(raw.arch) : nullptr;
  const bool adapter_permuted = adapter_fam && adapter_fam->gguf_interleaved_rope;
  const models::DecoderSpec spec = fam->decoder(c);

  LoraAdapter out;
  out.format = raw.format;
  out.alpha = raw.alpha;
  out.layers.resize(static_cast<size_t>(c.num_layers));
  for (auto& [name, pair] : raw.pairs) {
    int64_t layer = -1;
    size_t proj = kCount;
    for (size_t p = 0; p < kCount && proj == kCount; ++p)
      if (matches(spelled(projection_tensor(names, static_cast<LoraProjection>(p))), name, &layer)) proj = p;
    if (proj == kCount) {
      for (const TensorName* t : names.all())
        if (matches(spelled(*t), name, nullptr))
          throw Error(ErrorCode::kUnsupported, src + ": \"" + pair.a_name + "\" adapts \"" + name +
                                                   "\", which this engine does not adapt; adapters apply to " + adapted);
      throw Error(ErrorCode::kFormat, src + ": \"" + pair.a_name + "\" adapts \"" + name + "\", which is no tensor of a " +
                                          fam->name + " model (an adapter for another model?)");
    }
    const auto p = static_cast<LoraProjection>(proj);
    if (layer < 0 || layer >= c.num_layers)
      throw Error(ErrorCode::kValue, src + ": \"" + pair.a_name + "\" is for layer " + std::to_string(layer) +
                                         " but the model (" + c.source + ") has " + std::to_string(c.num_layers));
    if (!adaptable(spec.layers[static_cast<size_t>(layer)], p))
      throw Error(ErrorCode::kUnsupported, src + ": \"" + pair.a_name + "\" adapts the " + lora_projection_name(p) +
                                               " projection, which layer " + std::to_string(layer) + " of this " +
                                               fam->name + " model does not compute as one matrix product");
    const auto [rows, cols] = dims(c, p);
    if (pair.a.size(1) != cols)
      throw Error(ErrorCode::kShape, src + ": \"" + pair.a_name + "\" is " + shape_str(pair.a) + " but \"" + name +
                                         "\" takes " + std::to_string(cols) + " inputs: [rank, " + std::to_string(cols) +
                                         "] expected (an adapter for another model?)");
    if (pair.b.size(0) != rows)
      throw Error(ErrorCode::kShape, src + ": \"" + pair.b_name + "\" is " + shape_str(pair.b) + " but \"" + name +
                                         "\" gives " + std::to_string(rows) + " outputs: [" + std::to_string(rows) +
                                         ", rank] expected (an adapter for another model?)");
    if ((p == LoraProjection::kQ || p == LoraProjection::kK) && base_permuted != adapter_permuted) {
      const int64_t heads = p == LoraProjection::kQ ? c.num_heads : c.num_kv_heads;
      if (c.head_dim % 2 != 0)
        throw Error(ErrorCode::kUnsupported, src + ": the q/k row order cannot be converted for an odd head size");
      pair.b = reorder_rows(pair.b, heads, base_permuted);
    }
    LoraPair& slot = out.layers[static_cast<size_t>(layer)][proj];
    slot.a = pair.a;
    slot.b = pair.b;
    slot.scale = pair.scale;
    out.max_rank = std::max(out.max_rank, pair.a.size(0));
    out.bytes += pair.a.nbytes() + pair.b.nbytes();
    ++out.pairs;
  }
  return out;
}

}  // namespace spore::nlp::lora
