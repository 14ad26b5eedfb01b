// ModelConfig from config.json (+ generation_config.json beside it) or GGUF metadata, and the
// checks that make every later shape computation safe (NOTE [LLM engine] in docs/design.md).
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/gguf.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

namespace {

using Json = nlohmann::json;

using models::config_fail;
[[noreturn]] void fail(const std::string& source, const std::string& what) { config_fail(source, what); }

Json parse_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "cannot open " + path.string() + " (is the model directory complete?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_json_text(ss.str(), path.string());
}

// A field of a JSON object, typed; nullptr when absent or null.
const Json* field(const Json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

int64_t get_int(const Json& j, const char* name, const std::string& src, std::optional<int64_t> def = std::nullopt) {
  const Json* v = field(j, name);
  if (!v) {
    if (def) return *def;
    fail(src, std::string("missing required field \"") + name + "\" (an integer)");
  }
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_float()) {
    const double d = v->get<double>();
    if (std::floor(d) == d && std::fabs(d) < 9e15) return static_cast<int64_t>(d);
  }
  fail(src, std::string("field \"") + name + "\" must be an integer, got " + v->dump());
}

double get_num(const Json& j, const char* name, const std::string& src, std::optional<double> def = std::nullopt) {
  const Json* v = field(j, name);
  if (!v) {
    if (def) return *def;
    fail(src, std::string("missing required field \"") + name + "\" (a number)");
  }
  if (!v->is_number()) fail(src, std::string("field \"") + name + "\" must be a number, got " + v->dump());
  const double d = v->get<double>();
  if (!std::isfinite(d)) fail(src, std::string("field \"") + name + "\" must be finite");
  return d;
}

bool get_bool(const Json& j, const char* name, const std::string& src, bool def) {
  const Json* v = field(j, name);
  if (!v) return def;
  if (!v->is_boolean()) fail(src, std::string("field \"") + name + "\" must be true or false, got " + v->dump());
  return v->get<bool>();
}

std::string get_str(const Json& j, const char* name, const std::string& src) {
  const Json* v = field(j, name);
  if (!v) return "";
  if (!v->is_string()) fail(src, std::string("field \"") + name + "\" must be a string, got " + v->dump());
  return v->get<std::string>();
}

// eos_token_id: an id or a list of ids.
std::vector<int32_t> get_ids(const Json& j, const char* name, const std::string& src) {
  const Json* v = field(j, name);
  std::vector<int32_t> out;
  if (!v) return out;
  auto one = [&](const Json& e) {
    if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > std::numeric_limits<int32_t>::max())
      fail(src, std::string("field \"") + name + "\" must hold non-negative token ids, got " + v->dump());
    out.push_back(static_cast<int32_t>(e.get<int64_t>()));
  };
  if (v->is_array())
    for (const auto& e : *v) one(e);
  else
    one(*v);
  return out;
}

std::vector<double> get_doubles(const Json& j, const char* name, const std::string& src) {
  const Json* v = field(j, name);
  std::vector<double> out;
  if (!v) return out;
  if (!v->is_array()) fail(src, std::string("field \"") + name + "\" must be an array of numbers");
  for (const auto& e : *v) {
    if (!e.is_number() || !std::isfinite(e.get<double>()) || e.get<double>() <= 0)
      fail(src, std::string("field \"") + name + "\" must hold positive numbers, got " + e.dump());
    out.push_back(e.get<double>());
  }
  return out;
}

// transformers 4.x writes rope_theta and rope_scaling; 5.x writes one rope_parameters object
// holding rope_theta and the scaling fields.
void parse_rope_scaling(const Json& cfg, ModelConfig& c, const std::string& src) {
  const char* key = field(cfg, "rope_scaling") ? "rope_scaling" : "rope_parameters";
  const Json* rs = field(cfg, key);
  if (!rs) return;
  if (!rs->is_object()) fail(src, std::string("field \"") + key + "\" must be an object or null, got " + rs->dump());
  const std::string where = src + " " + key;
  if (field(*rs, "rope_theta")) {
    if (field(cfg, "rope_theta") && get_num(cfg, "rope_theta", src) != get_num(*rs, "rope_theta", where))
      fail(src, "rope_theta and " + std::string(key) + ".rope_theta disagree");
    c.rope_theta = get_num(*rs, "rope_theta", where);
  }
  std::string type = get_str(*rs, "rope_type", where);
  if (type.empty()) type = get_str(*rs, "type", where);
  if (type == "default") type = "";
  c.rope_scaling.type = type;
  c.rope_scaling.factor = get_num(*rs, "factor", where, 1.0);
  c.rope_scaling.low_freq_factor = get_num(*rs, "low_freq_factor", where, 1.0);
  c.rope_scaling.high_freq_factor = get_num(*rs, "high_freq_factor", where, 4.0);
  c.rope_scaling.original_max_position =
      get_int(*rs, "original_max_position_embeddings", where,
              get_int(cfg, "original_max_position_embeddings", src, int64_t{0}));
  c.rope_scaling.short_factor = get_doubles(*rs, "short_factor", where);
  c.rope_scaling.long_factor = get_doubles(*rs, "long_factor", where);
  c.rope_scaling.attention_factor = get_num(*rs, "attention_factor", where, 0.0);
  c.rope_scaling.beta_fast = get_num(*rs, "beta_fast", where, 32.0);
  c.rope_scaling.beta_slow = get_num(*rs, "beta_slow", where, 1.0);
}

}  // namespace

namespace models {
[[noreturn]] void config_fail(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::kFormat, source + ": " + what);
}
int64_t json_int(const Json& j, const char* name, const std::string& src, std::optional<int64_t> def) {
  return get_int(j, name, src, def);
}
double json_num(const Json& j, const char* name, const std::string& src, std::optional<double> def) {
  return get_num(j, name, src, def);
}
std::string json_str(const Json& j, const char* name, const std::string& src) { return get_str(j, name, src); }
}  // namespace models

Json parse_json_text(const std::string& text, const std::string& source) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) throw Error(ErrorCode::kFormat, source + ": not valid JSON");
  return j;
}

ModelConfig config_from_json(const Json& cfg, const std::string& src) {
  if (!cfg.is_object()) fail(src, "a model config must be a JSON object");
  ModelConfig c;
  c.source = src;
  const std::string model_type = get_str(cfg, "model_type", src);
  std::string arch;
  if (const Json* a = field(cfg, "architectures"); a && a->is_array() && !a->empty() && (*a)[0].is_string())
    arch = (*a)[0].get<std::string>();
  const models::Family* fam = models::find_family_hf(model_type, arch);
  if (!fam)
    throw Error(ErrorCode::kUnsupported, src + ": model_type \"" + model_type + "\" (architecture \"" + arch +
                                             "\") is not a family Spore runs; supported: " + models::family_names());
  c.family = fam->name;
  c.architecture = arch.empty() ? model_type : arch;
  c.vocab_size = get_int(cfg, "vocab_size", src);
  c.hidden_size = get_int(cfg, "hidden_size", src);
  c.intermediate_size = get_int(cfg, "intermediate_size", src);
  c.num_layers = get_int(cfg, "num_hidden_layers", src);
  c.num_heads = get_int(cfg, "num_attention_heads", src);
  c.num_kv_heads = get_int(cfg, "num_key_value_heads", src, c.num_heads);
  c.head_dim = get_int(cfg, "head_dim", src, int64_t{0});
  c.max_position_embeddings = get_int(cfg, "max_position_embeddings", src);
  c.rms_norm_eps = get_num(cfg, "rms_norm_eps", src, 1e-6);
  c.rope_theta = get_num(cfg, "rope_theta", src, 10000.0);
  parse_rope_scaling(cfg, c, src);
  c.tie_word_embeddings = get_bool(cfg, "tie_word_embeddings", src, fam->default_tie());
  c.attention_bias = get_bool(cfg, "attention_bias", src, false);
  fam->read_hf(cfg, c);
  const auto bos = get_ids(cfg, "bos_token_id", src);
  if (!bos.empty()) c.bos_id = bos[0];
  c.eos_ids = get_ids(cfg, "eos_token_id", src);
  validate_config(c);
  return c;
}

void validate_config(ModelConfig& c) {
  const std::string& src = c.source;
  auto positive = [&](int64_t v, const char* name) {
    if (v <= 0 || v > (int64_t{1} << 31)) fail(src, std::string(name) + " must be a positive size, got " + std::to_string(v));
  };
  positive(c.vocab_size, "vocab_size");
  positive(c.hidden_size, "hidden_size");
  positive(c.intermediate_size, "intermediate_size");
  positive(c.num_layers, "num_hidden_layers");
  positive(c.num_heads, "num_attention_heads");
  positive(c.num_kv_heads, "num_key_value_heads");
  positive(c.max_position_embeddings, "max_position_embeddings");
  if (c.num_layers > 4096) fail(src, "num_hidden_layers " + std::to_string(c.num_layers) + " is implausibly large");
  if (c.head_dim == 0) {
    if (c.hidden_size % c.num_heads != 0)
      fail(src, "hidden_size " + std::to_string(c.hidden_size) + " is not a multiple of num_attention_heads " +
                    std::to_string(c.num_heads) + " (and no head_dim is given)");
    c.head_dim = c.hidden_size / c.num_heads;
  }
  positive(c.head_dim, "head_dim");
  if (c.head_dim > 65536) fail(src, "head_dim " + std::to_string(c.head_dim) + " is implausibly large");
  if (c.num_heads % c.num_kv_heads != 0)
    fail(src, "num_attention_heads " + std::to_string(c.num_heads) + " is not a multiple of num_key_value_heads " +
                  std::to_string(c.num_kv_heads));
  if (const models::Family* fam = models::find_family(c.family)) {
    fam->validate(c);
  } else if (c.v_head_dim == 0) {  // a config no family made (tests' own models)
    c.v_head_dim = c.head_dim;
  }
  if (c.v_head_dim > 65536) fail(src, "v_head_dim " + std::to_string(c.v_head_dim) + " is implausibly large");
  if (c.rope_dim == 0) c.rope_dim = c.head_dim;
  if (c.rope_dim < 0 || c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    fail(src, "the rotary dimension " + std::to_string(c.rope_dim) + " must be even and at most head_dim " +
                  std::to_string(c.head_dim));
  if (!(c.rms_norm_eps >= 0) || !(c.rope_theta > 0)) fail(src, "rms_norm_eps must be >= 0 and rope_theta > 0");
  const auto& rs = c.rope_scaling;
  if (!(rs.type.empty() || rs.type == "linear" || rs.type == "llama3" || rs.type == "longrope"))
    throw Error(ErrorCode::kUnsupported, src + ": rope_scaling type \"" + rs.type +
                                             "\" is not supported (none, linear, llama3, longrope)");
  if (!(rs.factor > 0)) fail(src, "rope_scaling.factor must be positive");
  if (rs.type == "llama3" && (rs.original_max_position <= 0 || !(rs.high_freq_factor > rs.low_freq_factor)))
    fail(src, "rope_scaling (llama3) needs original_max_position_embeddings > 0 and high_freq_factor > low_freq_factor");
  if (rs.type == "longrope") {
    const size_t half = static_cast<size_t>(c.rope_dim / 2);
    if (rs.short_factor.size() != half || rs.long_factor.size() != half)
      fail(src, "rope_scaling (longrope) short_factor and long_factor need " + std::to_string(half) +
                    " entries (rotary dimension / 2), got " + std::to_string(rs.short_factor.size()) + " and " +
                    std::to_string(rs.long_factor.size()));
  }
  for (int32_t id : c.eos_ids)
    if (id >= c.vocab_size) fail(src, "eos_token_id " + std::to_string(id) + " is outside the vocabulary of " + std::to_string(c.vocab_size));
  if (c.bos_id && *c.bos_id >= c.vocab_size)
    fail(src, "bos_token_id " + std::to_string(*c.bos_id) + " is outside the vocabulary of " + std::to_string(c.vocab_size));
}

ModelConfig ModelConfig::from_hf_json(const std::filesystem::path& config_json) {
  ModelConfig c = config_from_json(parse_json_file(config_json), config_json.string());
  // generation_config.json beside it declares the ids generation stops at (often a list).
  const auto gen = config_json.parent_path() / "generation_config.json";
  std::error_code ec;
  if (std::filesystem::exists(gen, ec)) {
    const Json g = parse_json_file(gen);
    if (g.is_object()) {
      const auto eos = get_ids(g, "eos_token_id", gen.string());
      if (!eos.empty()) c.eos_ids = eos;
      const auto bos = get_ids(g, "bos_token_id", gen.string());
      if (!bos.empty()) c.bos_id = bos[0];
      validate_config(c);
    }
  }
  return c;
}

ModelConfig ModelConfig::from_gguf(const GgufFile& g) {
  const std::string src = g.source();
  const std::string arch = g.get_string("general.architecture");
  const models::Family* fam = models::find_family_gguf(arch);
  if (!fam)
    throw Error(ErrorCode::kUnsupported, src + ": general.architecture \"" + arch +
                                             "\" is not a family Spore runs; supported: " + models::family_names());
  ModelConfig c;
  c.source = src;
  c.family = fam->name;
  c.architecture = arch;
  const std::string p = arch + ".";
  auto opt_int = [&](const std::string& key, int64_t def) { return g.contains(key) ? g.get_int(key) : def; };
  auto opt_float = [&](const std::string& key, double def) { return g.contains(key) ? g.get_float(key) : def; };
  c.hidden_size = g.get_int(p + "embedding_length");
  c.intermediate_size = g.get_int(p + "feed_forward_length");
  c.num_layers = g.get_int(p + "block_count");
  c.num_heads = g.get_int(p + "attention.head_count");
  c.num_kv_heads = opt_int(p + "attention.head_count_kv", c.num_heads);
  c.head_dim = opt_int(p + "attention.key_length", 0);
  c.max_position_embeddings = g.get_int(p + "context_length");
  c.rms_norm_eps = g.get_float(p + "attention.layer_norm_rms_epsilon");
  c.rope_theta = opt_float(p + "rope.freq_base", 10000.0);
  c.rope_dim = opt_int(p + "rope.dimension_count", 0);
  // vocab: the key when written, else the embedding's rows (ne[1]).
  if (g.contains(p + "vocab_size")) {
    c.vocab_size = g.get_int(p + "vocab_size");
  } else {
    const auto& e = g.tensor_info("token_embd.weight");
    if (e.dims.size() != 2) fail(src, "tensor token_embd.weight must be 2-D");
    c.vocab_size = static_cast<int64_t>(e.dims[1]);
  }
  if (g.contains(p + "rope.scaling.type")) {
    std::string t = g.get_string(p + "rope.scaling.type");
    if (t == "none") t = "";
    c.rope_scaling.type = t;
    c.rope_scaling.factor = opt_float(p + "rope.scaling.factor", 1.0);
    c.rope_scaling.original_max_position = opt_int(p + "rope.scaling.original_context_length", 0);
  }
  bool has_output = false, has_bias = false;
  for (const auto& t : g.tensors()) {
    if (t.name == "output.weight") has_output = true;
    if (t.name == "blk.0.attn_q.bias") has_bias = true;
  }
  c.tie_word_embeddings = !has_output;
  c.attention_bias = has_bias;
  fam->read_gguf(g, c);
  if (g.contains("tokenizer.ggml.bos_token_id")) {
    const int64_t id = g.get_int("tokenizer.ggml.bos_token_id");
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) fail(src, "tokenizer.ggml.bos_token_id is out of range");
    c.bos_id = static_cast<int32_t>(id);
  }
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"})
    if (g.contains(key)) {
      const int64_t id = g.get_int(key);
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) fail(src, std::string(key) + " is out of range");
      bool seen = false;
      for (int32_t e : c.eos_ids) seen |= e == id;
      if (!seen) c.eos_ids.push_back(static_cast<int32_t>(id));
    }
  validate_config(c);
  return c;
}

// inv_freq[i] = 1 / theta^(2i / rot), then the scaling (HF's _compute_*_parameters).
std::vector<float> rope_inv_freq(const ModelConfig& c, int64_t context, double* attention_scale) {
  const int64_t half = c.rope_dim / 2;
  std::vector<double> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i)
    inv[static_cast<size_t>(i)] = 1.0 / std::pow(c.rope_theta, static_cast<double>(2 * i) / static_cast<double>(c.rope_dim));
  const auto& rs = c.rope_scaling;
  double scale = 1.0;
  if (rs.type == "linear") {
    for (double& f : inv) f /= rs.factor;
  } else if (rs.type == "llama3") {
    const double old_ctx = static_cast<double>(rs.original_max_position);
    const double low_wavelen = old_ctx / rs.low_freq_factor, high_wavelen = old_ctx / rs.high_freq_factor;
    for (double& f : inv) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen > low_wavelen) {
        f /= rs.factor;
      } else if (!(wavelen < high_wavelen)) {
        const double smooth = (old_ctx / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        f = (1 - smooth) * f / rs.factor + smooth * f;
      }
    }
  } else if (rs.type == "longrope") {
    const int64_t orig = rs.original_max_position > 0 ? rs.original_max_position : c.max_position_embeddings;
    const auto& ext = context > orig ? rs.long_factor : rs.short_factor;
    for (size_t i = 0; i < inv.size(); ++i) inv[i] /= ext[i];
    const double factor = rs.original_max_position > 0
                              ? static_cast<double>(c.max_position_embeddings) / static_cast<double>(orig)
                              : rs.factor;
    scale = rs.attention_factor > 0 ? rs.attention_factor
            : factor <= 1           ? 1.0
                                    : std::sqrt(1 + std::log(factor) / std::log(static_cast<double>(orig)));
  }
  if (attention_scale) *attention_scale = scale;
  return {inv.begin(), inv.end()};
}

}  // namespace spore::nlp
