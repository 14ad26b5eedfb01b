// PEFT's adapter format (NOTE [LoRA adapters]): adapter_config.json and the tensors of
// adapter_model.safetensors, named "base_model.model.<module>.lora_A.weight" / ".lora_B.weight"
// (save_pretrained drops the adapter's name).
#include <cmath>

#include "io/json_depth.h"
#include "nlp/lora/lora_files.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/ops.h"

namespace spore::nlp::lora {

using Json = nlohmann::json;

namespace {

[[noreturn]] void fail(ErrorCode code, const std::string& source, const std::string& what) {
  throw Error(code, source + ": " + what);
}

const Json* field(const Json& j, const char* name) {
  auto it = j.find(name);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

bool flag(const Json& j, const char* name, const std::string& src) {
  const Json* f = field(j, name);
  if (!f) return false;
  if (!f->is_boolean()) fail(ErrorCode::kFormat, src, std::string("\"") + name + "\" must be true or false");
  return f->get<bool>();
}

double positive_number(const Json& v, const std::string& what, const std::string& src) {
  if (!v.is_number()) fail(ErrorCode::kFormat, src, what + " must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d <= 0) fail(ErrorCode::kFormat, src, what + " must be a positive number");
  return d;
}

// PEFT matches pattern keys as regular expressions; plain module names (what users write) are
// matched here as suffixes of the module's dotted name, anything else is refused.
bool plain_module_name(const std::string& key) {
  if (key.empty()) return false;
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  return true;
}

bool suffix_matches(const std::string& module, const std::string& key) {
  return module == key || (module.size() > key.size() && module.ends_with(key) &&
                           module[module.size() - key.size() - 1] == '.');
}

Tensor as_float32(const Tensor& t, const std::string& name, const std::string& src) {
  if (!is_floating(t.dtype()))
    fail(ErrorCode::kDType, src, "tensor \"" + name + "\" is " + dtype_name(t.dtype()) + "; LoRA weights are floating point");
  if (t.ndim() != 2)
    fail(ErrorCode::kShape, src, "tensor \"" + name + "\" has " + std::to_string(t.ndim()) +
                                     " dimensions; LoRA A and B are matrices");
  return t.dtype() == DType::kFloat32 ? t.contiguous() : cast(t, DType::kFloat32).contiguous();
}

}  // namespace

PeftConfig parse_peft_config(const std::string& text, const std::string& src) {
  Json j;
  try {
    j = io::parse_json_bounded<Json>(text);
  } catch (const io::JsonTooDeep&) {
    fail(ErrorCode::kFormat, src, "nests objects and arrays too deeply for an adapter config");
  } catch (const Json::exception& e) {
    fail(ErrorCode::kFormat, src, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object()) fail(ErrorCode::kFormat, src, "an adapter config must be a JSON object");
  PeftConfig c;
  c.source = src;
  if (const Json* t = field(j, "peft_type"); t && !(t->is_string() && t->get<std::string>() == "LORA"))
    fail(ErrorCode::kUnsupported, src, "peft_type is " + t->dump() + "; only LORA adapters are applied");
  if (flag(j, "use_dora", src))
    fail(ErrorCode::kUnsupported, src, "use_dora is true; DoRA's magnitude vectors are not applied (merge the adapter "
                                       "into the model instead)");
  if (flag(j, "fan_in_fan_out", src))
    fail(ErrorCode::kUnsupported, src, "fan_in_fan_out is true (an adapter for GPT-2-style Conv1D weights); the "
                                       "families here store [out, in] weights");
  if (flag(j, "lora_bias", src)) fail(ErrorCode::kUnsupported, src, "lora_bias is true; LoRA biases are not applied");
  if (const Json* m = field(j, "modules_to_save"); m && !(m->is_array() && m->empty()))
    fail(ErrorCode::kUnsupported, src, "modules_to_save replaces whole modules (" + m->dump() +
                                           "); only low-rank updates are applied without merging");
  const Json* r = field(j, "r");
  if (!r || !r->is_number_integer() || r->get<int64_t>() <= 0)
    fail(ErrorCode::kFormat, src, "\"r\" (the rank) must be a positive integer");
  c.r = r->get<int64_t>();
  const Json* alpha = field(j, "lora_alpha");
  c.lora_alpha = alpha ? positive_number(*alpha, "\"lora_alpha\"", src) : static_cast<double>(c.r);
  c.use_rslora = flag(j, "use_rslora", src);
  if (const Json* t = field(j, "target_modules")) {
    if (t->is_string()) {
      c.targets_regex = t->get<std::string>();
    } else if (t->is_array()) {
      for (const Json& m : *t) {
        if (!m.is_string() || m.get<std::string>().empty())
          fail(ErrorCode::kFormat, src, "\"target_modules\" must list module names (strings)");
        c.target_modules.push_back(m.get<std::string>());
      }
    } else {
      fail(ErrorCode::kFormat, src, "\"target_modules\" must be a list of module names or a string");
    }
  }
  if (const Json* p = field(j, "alpha_pattern")) {
    if (!p->is_object()) fail(ErrorCode::kFormat, src, "\"alpha_pattern\" must be an object");
    for (const auto& [key, value] : p->items()) {
      if (!plain_module_name(key))
        fail(ErrorCode::kUnsupported, src, "alpha_pattern key \"" + key +
                                               "\" is a regular expression; only plain module names are matched");
      c.alpha_pattern[key] = positive_number(value, "alpha_pattern[\"" + key + "\"]", src);
    }
  }
  if (const Json* p = field(j, "rank_pattern")) {
    if (!p->is_object()) fail(ErrorCode::kFormat, src, "\"rank_pattern\" must be an object");
  }
  return c;
}

RawAdapter read_peft_tensors(const PeftConfig& config, const SafeTensors& st, const std::string& src) {
  static const std::string kPrefix = "base_model.model.";
  RawAdapter raw;
  raw.format = "peft";
  raw.source = src;
  raw.config_source = config.source;
  raw.alpha = config.lora_alpha;
  for (const auto& [name, tensor] : st.tensors) {
    if (name.find("lora_embedding_") != std::string::npos)
      fail(ErrorCode::kUnsupported, src, "tensor \"" + name + "\" adapts an embedding; only projections are applied");
    if (name.find("lora_magnitude_vector") != std::string::npos)
      fail(ErrorCode::kUnsupported, src, "tensor \"" + name + "\" is a DoRA magnitude; DoRA is not applied");
    const bool is_a = name.ends_with(".lora_A.weight"), is_b = name.ends_with(".lora_B.weight");
    if (!name.starts_with(kPrefix) || !(is_a || is_b) || name.size() <= kPrefix.size() + 14)
      fail(ErrorCode::kFormat, src, "tensor \"" + name + "\" is not a LoRA weight (\"base_model.model.<module>."
                                    "lora_A.weight\" or \".lora_B.weight\")");
    const std::string module = name.substr(kPrefix.size(), name.size() - kPrefix.size() - 14);
    RawPair& p = raw.pairs[module + ".weight"];
    (is_a ? p.a_name : p.b_name) = name;
    (is_a ? p.a : p.b) = as_float32(tensor, name, src);
  }
  for (auto& [base, p] : raw.pairs) {
    if (!p.a.defined() || !p.b.defined())
      fail(ErrorCode::kFormat, src, "tensor \"" + (p.a.defined() ? p.a_name : p.b_name) + "\" has no " +
                                        (p.a.defined() ? "lora_B" : "lora_A") + " partner");
    const int64_t rank = p.a.size(0);
    if (rank <= 0 || p.b.size(1) != rank)
      fail(ErrorCode::kShape, src, "\"" + p.a_name + "\" has " + std::to_string(rank) + " rows but \"" + p.b_name +
                                       "\" has " + std::to_string(p.b.size(1)) + " columns; A and B must share the rank");
    const std::string module = base.substr(0, base.size() - 7);
    double alpha = config.lora_alpha;
    for (const auto& [key, a] : config.alpha_pattern)
      if (suffix_matches(module, key)) {
        alpha = a;
        break;
      }
    p.scale = config.use_rslora ? alpha / std::sqrt(static_cast<double>(rank)) : alpha / static_cast<double>(rank);
  }
  if (raw.pairs.empty()) fail(ErrorCode::kFormat, src, "holds no LoRA tensors");
  return raw;
}

}  // namespace spore::nlp::lora
