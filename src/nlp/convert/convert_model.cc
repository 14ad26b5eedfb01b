// `spore convert` (include/spore/nlp/convert.h): config.json to <arch>.* hyperparameters, the
// safetensors weights to llama.cpp's tensor names and types, streamed into a GgufWriter one tensor
// at a time (each is read, permuted and quantised only when the file is written).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <span>

#include "convert_internal.h"
#include "nlp/model_internal.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/half.h"
#include "spore/nlp/convert.h"
#include "spore/ops.h"
#include "spore/quant.h"

namespace spore::nlp {

namespace fs = std::filesystem;
using nlohmann::json;
using convert::read_json_file;

namespace {

// The family that claims config.json and how llama.cpp's converter writes it (the family's file
// says: NOTE [Model families]); kUnsupported naming the architecture otherwise.
const models::Family& family_of(const json& config, const fs::path& file) {
  std::string hf;
  if (config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty() &&
      config["architectures"][0].is_string())
    hf = config["architectures"][0].get<std::string>();
  const std::string mt = config.contains("model_type") && config["model_type"].is_string() ? config["model_type"].get<std::string>() : "";
  const models::Family* f = models::find_family_hf(hf.empty() ? mt : "", hf);
  std::string writable;
  for (const models::Family* w : models::all_families())
    if (!w->writes.arch.empty()) writable += (writable.empty() ? "" : ", ") + w->hf_architectures.at(0);
  if (!f || f->writes.arch.empty())
    throw Error(ErrorCode::kUnsupported, "'" + file.string() + "': architecture '" + (hf.empty() ? mt : hf) +
                                             "' is not one spore convert writes (" + writable + ")");
  return *f;
}

int64_t need_int(const json& c, const char* key, const fs::path& file) {
  if (!c.contains(key) || !c[key].is_number_integer() || c[key].get<int64_t>() <= 0)
    throw Error(ErrorCode::kFormat, "'" + file.string() + "': '" + key + "' is missing or not a positive integer");
  return c[key].get<int64_t>();
}
std::optional<double> opt_number(const json& c, const char* key) {
  if (c.is_object() && c.contains(key) && c[key].is_number()) return c[key].get<double>();
  return std::nullopt;
}

// A Hugging Face tensor's GGUF name by the family's table (the loader's), with the layer number
// filled in, and its expert number for a routed expert's tensor (-1 otherwise: those of one
// layer's experts stack into one 3-D GGUF tensor, NOTE [Mixture of experts]); none for a name the
// table lacks or a layer past `blocks`.
std::optional<std::pair<std::string, int64_t>> gguf_name(const models::Family& family, const std::string& hf,
                                                         int64_t blocks) {
  static const std::regex kLayer(R"(model\.layers\.(\d+)\.(.+))");
  static const std::regex kExpert(R"((.*\.experts\.)(\d+)(\..+))");
  std::smatch m;
  std::string pattern = hf;
  int64_t b = -1, expert = -1;
  if (std::regex_match(hf, m, kLayer)) {
    if (m[1].str().size() > 9) return std::nullopt;
    b = std::stoll(m[1].str());
    if (b >= blocks) return std::nullopt;
    pattern = "model.layers.{layer}." + m[2].str();
  }
  const std::string plain = pattern;
  if (std::regex_match(plain, m, kExpert) && m[2].str().size() <= 9) {
    expert = std::stoll(m[2].str());
    pattern = m[1].str() + "{expert}" + m[3].str();
  }
  for (const models::TensorName* t : family.names.all())
    if (!t->hf.empty() && t->hf == pattern)
      return std::make_pair(b < 0 ? t->gguf : models::layer_name(t->gguf, b), expert);
  return std::nullopt;
}

// Sort key: token_embd, then the blocks in order (tensors within a block in llama.cpp's usual
// order), then output_norm and output.
std::pair<int64_t, int> order_of(const std::string& name) {
  static const char* kWithin[] = {"attn_norm", "attn_q.", "attn_q_norm", "attn_k.", "attn_k_norm", "attn_v.",
                                  "attn_output", "ffn_norm", "ffn_gate_inp.", "ffn_gate_exps", "ffn_up_exps",
                                  "ffn_down_exps", "ffn_gate_inp_shexp", "ffn_gate_shexp", "ffn_up_shexp",
                                  "ffn_down_shexp", "ffn_gate", "ffn_up", "ffn_down"};
  if (name.rfind("token_embd", 0) == 0) return {-1, 0};
  if (name.rfind("output_norm", 0) == 0) return {INT64_MAX, 0};
  if (name.rfind("output", 0) == 0) return {INT64_MAX, 1};
  if (name.rfind("rope_freqs", 0) == 0) return {-1, 1};
  const size_t dot = name.find('.', 4);
  const int64_t b = std::stoll(name.substr(4, dot - 4));
  const std::string rest = name.substr(dot + 1);
  for (int k = 0; k < (int)std::size(kWithin); ++k)
    if (rest.rfind(kWithin[k], 0) == 0) return {b, 2 * k + (rest.find(".bias") != std::string::npos)};
  return {b, 99};
}

struct Requested {
  GgmlType type;          // for 2-D weights
  uint32_t file_type;     // general.file_type (llama.cpp's LlamaFileType)
  bool q4_k_m = false;    // llama.cpp's Q4_K_M mix instead of one type
};
Requested parse_type(const std::string& t) {
  if (t == "f32") return {GgmlType::kF32, 0};
  if (t == "f16") return {GgmlType::kF16, 1};
  if (t == "bf16") return {GgmlType::kBF16, 32};
  if (t == "q8_0") return {GgmlType::kQ8_0, 7};
  if (t == "q4_0") return {GgmlType::kQ4_0, 2};
  if (t == "q4_1") return {GgmlType::kQ4_1, 3};
  if (t == "q5_0") return {GgmlType::kQ5_0, 8};
  if (t == "q4_k") return {GgmlType::kQ4_K, 14};  // every matrix Q4_K: llama.cpp's MOSTLY_Q4_K_S
  if (t == "q6_k") return {GgmlType::kQ6_K, 18};
  if (t == "q4_k_m") return {GgmlType::kQ4_K, 15, true};
  throw Error(ErrorCode::kValue, "spore convert: --type '" + t +
                                     "' is not one of f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q4_k, q6_k, q4_k_m");
}

// llama.cpp's Q4_K_M for a dense model (llama-quant.cpp, llama_tensor_get_type): the output
// matrix (or the embedding a tied head shares) Q6_K, attn_v and ffn_down Q6_K in the layers its
// use_more_bits picks (the first and last eighth, and every third between), every other matrix
// Q4_K; the per-tensor fallbacks (fit_type) follow.
GgmlType q4_k_m_type(const std::string& name, int64_t layers, bool tied) {
  if (name == "output.weight" || (tied && name == "token_embd.weight")) return GgmlType::kQ6_K;
  const auto ends = [&](const char* tail) {
    const size_t n = std::strlen(tail);
    return name.size() >= n && name.compare(name.size() - n, n, tail) == 0;
  };
  if (name.rfind("blk.", 0) == 0 && (ends(".attn_v.weight") || ends(".ffn_down.weight"))) {
    const int64_t i = std::stoll(name.substr(4));
    const bool more = i < layers / 8 || i >= 7 * layers / 8 || (i - layers / 8) % 3 == 2;
    return more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
  }
  return GgmlType::kQ4_K;
}

// The type a weight of row length `cols` gets: the requested one when its rows fill whole blocks,
// else llama.cpp's fallback (llama-quant.cpp: q4_k -> q5_0 when the rows fill 32-value blocks,
// NOTE [Quantization types]), else f16.
GgmlType fit_type(GgmlType want, uint64_t cols, std::string& why) {
  const uint32_t block = quant_traits(want).block_size;
  if (cols % block == 0) return want;
  GgmlType next = want == GgmlType::kQ4_K   ? GgmlType::kQ5_0
                  : want == GgmlType::kQ6_K ? GgmlType::kQ8_0
                                            : GgmlType::kF16;
  if (cols % quant_traits(next).block_size != 0) next = GgmlType::kF16;
  why = std::string("rows of ") + std::to_string(cols) + " values do not fill " + quant_traits(want).name +
        " blocks of " + std::to_string(block) + "; written as " + quant_traits(next).name;
  return next;
}

// Rows of a q/k projection reordered as llama.cpp's converter does: within each head the rows
// (first half, second half) are interleaved, so that GGUF readers rotate adjacent pairs.
// new row h*hd + 2i + j = old row h*hd + j*hd/2 + i.
std::vector<float> permute_rows(const std::vector<float>& w, int64_t rows, int64_t cols, int64_t heads,
                                const std::string& name) {
  if (heads <= 0 || rows % (heads * 2) != 0)
    throw Error(ErrorCode::kShape, "tensor '" + name + "' has " + std::to_string(rows) + " rows, which " +
                                       std::to_string(heads) + " heads of an even size cannot hold; check "
                                       "num_attention_heads / num_key_value_heads in config.json");
  const int64_t hd = rows / heads, half = hd / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j)
        std::memcpy(&out[(size_t)((h * hd + 2 * i + j) * cols)], &w[(size_t)((h * hd + j * half + i) * cols)],
                    (size_t)cols * sizeof(float));
  return out;
}

// Encodes float rows of `cols` values as `type`.
void encode(GgmlType type, std::span<const float> v, uint64_t cols, FileSink& sink) {
  switch (type) {
    case GgmlType::kF32: sink.write(v.data(), v.size() * sizeof(float)); return;
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      std::vector<uint16_t> h(v.size());
      for (size_t i = 0; i < v.size(); ++i)
        h[i] = type == GgmlType::kF16 ? float_to_half_bits(v[i]) : float_to_bf16_bits(v[i]);
      sink.write(h.data(), h.size() * 2);
      return;
    }
    default: {
      std::vector<uint8_t> row(quant_row_bytes(type, (int64_t)cols));
      for (size_t r = 0; r < v.size() / cols; ++r) {
        quantize_row(type, v.subspan(r * cols, cols), row);
        sink.write(row);
      }
    }
  }
}

// Where each tensor is: one file, or the shards an index names.
std::map<std::string, std::shared_ptr<SafeTensorsFile>> open_weights(const fs::path& dir) {
  std::map<std::string, std::shared_ptr<SafeTensorsFile>> where;
  const fs::path index = dir / "model.safetensors.index.json";
  std::vector<fs::path> files;
  if (fs::exists(index)) {
    const json j = read_json_file(index);
    if (!j.contains("weight_map") || !j["weight_map"].is_object())
      throw Error(ErrorCode::kFormat, "'" + index.string() + "' has no weight_map object");
    std::map<std::string, std::shared_ptr<SafeTensorsFile>> shards;
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        throw Error(ErrorCode::kFormat, "'" + index.string() + "': weight_map['" + it.key() + "'] is not a file name");
      const std::string shard = it.value().get<std::string>();
      if (shard.find('/') != std::string::npos || shard == "..")
        throw Error(ErrorCode::kFormat, "'" + index.string() + "': shard '" + shard + "' is not a plain file name");
      auto& f = shards[shard];
      if (!f) f = std::make_shared<SafeTensorsFile>(dir / shard);
      if (!f->contains(it.key()))
        throw Error(ErrorCode::kFormat, "'" + index.string() + "' puts tensor '" + it.key() + "' in '" + shard +
                                            "', which does not hold it");
      where[it.key()] = f;
    }
    return where;
  }
  const fs::path single = dir / "model.safetensors";
  if (!fs::exists(single))
    throw Error(ErrorCode::kIO, "'" + dir.string() + "' has neither model.safetensors nor "
                                                     "model.safetensors.index.json; is it a Hugging Face model directory?");
  auto f = std::make_shared<SafeTensorsFile>(single);
  for (const SafeTensorInfo& t : f->tensors()) where[t.name] = f;
  return where;
}

}  // namespace

ConvertReport convert_hf_to_gguf(const fs::path& dir, const fs::path& out, const ConvertOptions& options) {
  const Requested req = parse_type(options.type);
  const fs::path config_path = dir / "config.json";
  const json config = read_json_file(config_path);
  if (!config.is_object()) throw Error(ErrorCode::kFormat, "'" + config_path.string() + "' is not a JSON object");
  const models::Family& family = family_of(config, config_path);
  const models::GgufWriting arch = family.writes;
  const std::string a = arch.arch;

  const int64_t blocks = need_int(config, "num_hidden_layers", config_path);
  const int64_t hidden = need_int(config, "hidden_size", config_path);
  const int64_t heads = need_int(config, "num_attention_heads", config_path);
  const int64_t ff = need_int(config, "intermediate_size", config_path);
  const int64_t vocab = need_int(config, "vocab_size", config_path);
  const int64_t kv_heads = config.contains("num_key_value_heads") ? need_int(config, "num_key_value_heads", config_path) : heads;
  if (heads % kv_heads != 0)
    throw Error(ErrorCode::kFormat, "'" + config_path.string() + "': num_attention_heads " + std::to_string(heads) +
                                        " is not a multiple of num_key_value_heads " + std::to_string(kv_heads));

  GgufWriter w;
  w.set_string("general.architecture", a);
  w.set_string("general.type", "model");
  w.set_string("general.name", options.name.empty() ? fs::absolute(dir).lexically_normal().filename().string()
                                                    : options.name);
  // The family's own keys first, from config.json as the loader reads it (its checks included);
  // a head size it writes (deepseek2's) is not written again below.
  const ModelConfig model_config = config_from_json(config, config_path.string());
  family.write_gguf(model_config, w);
  const auto experts_it = model_config.extra.find("num_experts");
  const int64_t experts = experts_it == model_config.extra.end() ? 0 : static_cast<int64_t>(experts_it->second);
  w.set_u32(a + ".block_count", (uint32_t)blocks);
  if (config.contains("max_position_embeddings"))
    w.set_u32(a + ".context_length", (uint32_t)need_int(config, "max_position_embeddings", config_path));
  w.set_u32(a + ".embedding_length", (uint32_t)hidden);
  w.set_u32(a + ".feed_forward_length", (uint32_t)ff);
  w.set_u32(a + ".attention.head_count", (uint32_t)heads);
  if (config.contains("num_key_value_heads")) w.set_u32(a + ".attention.head_count_kv", (uint32_t)kv_heads);

  // RoPE: rope_parameters (transformers 5) or rope_scaling, with rope_theta mirrored in.
  json rope = config.contains("rope_parameters") && config["rope_parameters"].is_object() ? config["rope_parameters"]
              : config.contains("rope_scaling") && config["rope_scaling"].is_object() ? config["rope_scaling"]
                                                                                       : json::object();
  if (!rope.contains("rope_theta") && opt_number(config, "rope_theta")) rope["rope_theta"] = config["rope_theta"];
  if (!rope.contains("rope_type") && rope.contains("type")) rope["rope_type"] = rope["type"];
  if (!rope.contains("original_max_position_embeddings") && config.contains("original_max_position_embeddings"))
    rope["original_max_position_embeddings"] = config["original_max_position_embeddings"];
  const std::string rope_type = rope.contains("rope_type") && rope["rope_type"].is_string() ? rope["rope_type"].get<std::string>() : "";
  const std::optional<double> factor = opt_number(rope, "factor");
  if (rope_type == "linear" && factor) {
    w.set_string(a + ".rope.scaling.type", "linear");
    w.set_f32(a + ".rope.scaling.factor", (float)*factor);
  } else if (rope_type == "yarn" && factor) {
    w.set_string(a + ".rope.scaling.type", "yarn");
    w.set_f32(a + ".rope.scaling.factor", (float)*factor);
    if (!opt_number(rope, "original_max_position_embeddings"))
      throw Error(ErrorCode::kFormat, "'" + config_path.string() + "': yarn rope scaling needs original_max_position_embeddings");
    w.set_u32(a + ".rope.scaling.original_context_length", (uint32_t)*opt_number(rope, "original_max_position_embeddings"));
  } else if (!rope_type.empty() && rope_type != "default" && rope_type != "llama3" && !arch.own_rope) {
    throw Error(ErrorCode::kUnsupported, "'" + config_path.string() + "': rope type '" + rope_type +
                                             "' is not one spore convert writes (linear, yarn, llama3)");
  }
  if (auto theta = opt_number(rope, "rope_theta")) w.set_f32(a + ".rope.freq_base", (float)*theta);
  if (auto eps = opt_number(config, "rms_norm_eps")) w.set_f32(a + ".attention.layer_norm_rms_epsilon", (float)*eps);
  const bool has_head_dim = config.contains("head_dim") && config["head_dim"].is_number_integer();
  const int64_t head_dim = has_head_dim ? need_int(config, "head_dim", config_path) : hidden / heads;
  // transformers' LlamaConfig always carries head_dim, so llama.cpp writes the lengths for llama
  // even when config.json leaves head_dim out.
  if (!arch.own_head_lengths && (has_head_dim || arch.llama_extras) && !w.contains(a + ".attention.key_length")) {
    w.set_u32(a + ".attention.key_length", (uint32_t)head_dim);
    w.set_u32(a + ".attention.value_length", (uint32_t)head_dim);
  }
  w.set_u32("general.file_type", req.file_type);
  w.set_u32("general.quantization_version", 2);
  if (arch.llama_extras) {
    w.set_u32(a + ".vocab_size", (uint32_t)vocab);
    w.set_u32(a + ".rope.dimension_count", (uint32_t)head_dim);
  }

  std::vector<models::ExtraTensor> extra_tensors;
  family.write_gguf_extras(config, w, extra_tensors);

  ConvertReport report;
  report.architecture = a;
  report.vocab_size = (size_t)vocab;
  if (arch.llama_extras) {  // LlamaModel.set_vocab: add_prefix_space from tokenizer_config.json
    const fs::path tc = dir / "tokenizer_config.json";
    if (fs::exists(tc)) {
      const json j = read_json_file(tc);
      if (j.is_object() && j.contains("add_prefix_space") && j["add_prefix_space"].is_boolean())
        w.set_bool("tokenizer.ggml.add_space_prefix", j["add_prefix_space"].get<bool>());
    }
  }
  report.merges = convert::add_tokenizer_metadata(w, dir, vocab, config);
  // generation_config.json: its eos id when the tokenizer files name none.
  if (!w.contains("tokenizer.ggml.eos_token_id") && fs::exists(dir / "generation_config.json")) {
    const json g = read_json_file(dir / "generation_config.json");
    json eos = g.is_object() && g.contains("eos_token_id") ? g["eos_token_id"] : json();
    if (eos.is_array() && !eos.empty()) eos = eos[0];
    if (eos.is_number_integer() && eos.get<int64_t>() >= 0 && eos.get<int64_t>() < vocab)
      w.set_u32("tokenizer.ggml.eos_token_id", (uint32_t)eos.get<int64_t>());
  }

  // Tensors.
  auto where = open_weights(dir);
  struct Plan {
    std::string gguf, hf;
    int64_t permute_heads = 0;
    std::vector<std::string> experts;  // a stacked tensor's sources, by expert number
  };
  std::vector<Plan> plans;
  std::map<std::string, std::map<int64_t, std::string>> stacks;  // GGUF name -> expert -> HF name
  for (const auto& [hf, file] : where) {
    if (hf.size() > 22 && hf.compare(hf.size() - 22, 22, ".rotary_emb.inv_freq") == 0) continue;
    const auto mapped = gguf_name(family, hf, blocks);
    if (!mapped)
      throw Error(ErrorCode::kUnsupported, "'" + file->path().string() + "': tensor '" + hf + "' has no GGUF name in the " +
                                               a + " architecture (or its layer is past num_hidden_layers = " +
                                               std::to_string(blocks) + ")");
    if (mapped->second >= 0) {
      if (mapped->second >= experts)
        throw Error(ErrorCode::kFormat, "'" + file->path().string() + "': tensor '" + hf + "' has expert index " +
                                            std::to_string(mapped->second) + ", outside the table of " +
                                            std::to_string(experts) + " experts config.json declares");
      stacks[mapped->first][mapped->second] = hf;
      continue;
    }
    const std::string* name = &mapped->first;
    Plan p;
    p.gguf = *name;
    p.hf = hf;
    if (arch.permute_qk && (hf.find("q_proj.") != std::string::npos)) p.permute_heads = heads;
    if (arch.permute_qk && (hf.find("k_proj.") != std::string::npos)) p.permute_heads = kv_heads;
    plans.push_back(std::move(p));
  }
  for (auto& [gname, members] : stacks) {
    Plan p;
    p.gguf = gname;
    p.hf = members.begin()->second;
    for (int64_t e = 0; e < experts; ++e) {
      const auto it = members.find(e);
      if (it == members.end())
        throw Error(ErrorCode::kFormat, "'" + dir.string() + "': " + gname + " stacks " + std::to_string(experts) +
                                            " experts, but expert " + std::to_string(e) + "'s tensor (like '" +
                                            members.begin()->second + "') is missing");
      p.experts.push_back(it->second);
    }
    plans.push_back(std::move(p));
  }
  if (!where.count("model.embed_tokens.weight"))
    throw Error(ErrorCode::kFormat, "'" + dir.string() + "': the weights have no model.embed_tokens.weight");
  std::sort(plans.begin(), plans.end(), [](const Plan& x, const Plan& y) { return order_of(x.gguf) < order_of(y.gguf); });

  // Llama 3 RoPE scaling: per-frequency factors in rope_freqs.weight (llama.cpp's
  // generate_extra_tensors), computed in float32 as there.
  if (rope_type == "llama3") {
    const double base = opt_number(rope, "rope_theta").value_or(10000.0);
    const double fac = factor.value_or(8.0), lo = opt_number(rope, "low_freq_factor").value_or(1.0),
                 hi = opt_number(rope, "high_freq_factor").value_or(4.0),
                 old_ctx = opt_number(rope, "original_max_position_embeddings").value_or(8192.0);
    const double lo_wavelen = old_ctx / lo, hi_wavelen = old_ctx / hi;
    std::vector<float> factors;
    for (int64_t i = 0; i < head_dim; i += 2) {
      // float32 throughout, as the reference computes with torch float32 tensors.
      const float freq = 1.0f / std::pow((float)base, (float)i / (float)head_dim);
      const float wavelen = (float)(2 * M_PI) / freq;
      if (wavelen < hi_wavelen) factors.push_back(1.f);
      else if (wavelen > lo_wavelen) factors.push_back((float)fac);
      else {
        const float smooth = ((float)old_ctx / wavelen - (float)lo) / (float)(hi - lo);
        factors.push_back(1.f / ((1.f - smooth) / (float)fac + smooth));
      }
    }
    std::vector<uint8_t> bytes(factors.size() * 4);
    std::memcpy(bytes.data(), factors.data(), bytes.size());
    ConvertedTensor t{"rope_freqs.weight", "(rope_scaling llama3)", GgmlType::kF32, {(uint64_t)factors.size()}, ""};
    w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
    report.tensors.push_back(std::move(t));
  }

  for (models::ExtraTensor& e : extra_tensors) {
    std::vector<uint8_t> bytes(e.values.size() * 4);
    std::memcpy(bytes.data(), e.values.data(), bytes.size());
    ConvertedTensor t{e.name, "(config.json)", GgmlType::kF32, {(uint64_t)e.values.size()}, ""};
    w.add_tensor(t.name, t.type, t.dims, std::move(bytes));
    report.tensors.push_back(std::move(t));
  }

  bool tied = true;  // no output.weight: the head is the embedding (q4_k_m quantises it as the head)
  for (const Plan& p : plans) tied = tied && p.gguf != "output.weight";
  const size_t total = plans.size();
  size_t index = 0;
  for (const Plan& p : plans) {
    const SafeTensorsFile& f = *where.at(p.hf);
    const SafeTensorInfo& info = f.info(p.hf);
    const Shape& s = info.shape;
    for (const std::string& member : p.experts)  // every expert of a stack has the first's shape
      if (where.at(member)->info(member).shape != s)
        throw Error(ErrorCode::kShape, "'" + dir.string() + "': tensor '" + member + "' differs in shape from '" + p.hf +
                                           "', which " + p.gguf + " stacks with it");
    if (s.ndim() < 1 || s.ndim() > 2)
      throw Error(ErrorCode::kShape, "'" + f.path().string() + "': tensor '" + p.hf + "' has " + std::to_string(s.ndim()) +
                                         " dimensions; the decoder's weights are 1-D or 2-D");
    if (p.hf == "model.embed_tokens.weight" && (s[0] != vocab || s[1] != hidden))
      throw Error(ErrorCode::kShape, "'" + f.path().string() + "': model.embed_tokens.weight is [" + std::to_string(s[0]) +
                                         ", " + std::to_string(s[1]) + "], config.json says [vocab_size " +
                                         std::to_string(vocab) + ", hidden_size " + std::to_string(hidden) + "]");
    ConvertedTensor t;
    t.name = p.gguf;
    t.source = p.hf;
    const uint64_t cols = (uint64_t)s[s.ndim() - 1], rows = s.ndim() == 2 ? (uint64_t)s[0] : 1;
    t.dims = s.ndim() == 2 ? std::vector<uint64_t>{cols, rows} : std::vector<uint64_t>{cols};
    if (!p.experts.empty()) t.dims.push_back((uint64_t)p.experts.size());  // [experts, rows, cols]
    // 1-D tensors and norms stay F32; matrices get the requested type where their rows fit.
    // The routers stay F32 as llama.cpp's quantizer keeps them (ffn_gate_inp*).
    const bool matrix = s.ndim() == 2 && p.gguf.size() > 7 && p.gguf.compare(p.gguf.size() - 7, 7, ".weight") == 0 &&
                        p.gguf.find("_norm.weight") == std::string::npos && p.gguf.find("ffn_gate_inp") == std::string::npos;
    t.type = matrix ? convert_matrix_type(options.type, p.gguf, cols, blocks, tied, &t.fallback) : GgmlType::kF32;
    report.parameters += rows * cols * std::max<uint64_t>(1, p.experts.size());
    const GgmlType type = t.type;
    const std::string gname = p.gguf, hname = p.hf;
    const int64_t ph = p.permute_heads;
    const bool t_is_1d = s.ndim() == 1;
    // Gemma's norms compute x * (1 + w): llama.cpp's converter stores 1 + w.
    const bool plus_one = arch.norm_plus_one && hname.size() >= 11 && hname.compare(hname.size() - 11, 11, "norm.weight") == 0;
    auto file = where.at(p.hf);
    std::vector<std::pair<std::shared_ptr<SafeTensorsFile>, std::string>> members;
    for (const std::string& m : p.experts) members.emplace_back(where.at(m), m);
    const size_t my_index = ++index;
    auto progress = options.progress;
    w.add_tensor(t.name, t.type, t.dims, [=](FileSink& sink) {
      if (progress) progress(my_index, total, gname);
      // A stacked tensor: each expert's matrix in turn, one in memory at a time.
      for (const auto& [member_file, member] : members) {
        const Tensor one = cast(member_file->load(member), DType::kFloat32).contiguous();
        encode(type, {static_cast<const float*>(one.data_ptr()), (size_t)one.numel()}, cols, sink);
      }
      if (!members.empty()) return;
      // One tensor in memory at a time, read in place as float32 (a copy only to permute).
      const Tensor src = cast(file->load(hname), DType::kFloat32).contiguous();
      const std::span<const float> v(static_cast<const float*>(src.data_ptr()), (size_t)src.numel());
      if (plus_one) {
        std::vector<float> shifted(v.begin(), v.end());
        for (float& x : shifted) x += 1.0f;
        encode(type, shifted, cols, sink);
      } else if (ph > 0) {  // a bias permutes like a one-column matrix
        const std::vector<float> copy(v.begin(), v.end());
        encode(type, rows == 1 && t_is_1d ? permute_rows(copy, (int64_t)cols, 1, ph, hname)
                                          : permute_rows(copy, (int64_t)rows, (int64_t)cols, ph, hname),
               cols, sink);
      } else {
        encode(type, v, cols, sink);
      }
    });
    report.tensors.push_back(std::move(t));
  }
  w.write(out);
  report.file_bytes = fs::file_size(out);
  return report;
}

GgmlType convert_matrix_type(const std::string& type, const std::string& name, uint64_t cols, int64_t layers,
                             bool tied, std::string* why) {
  const Requested req = parse_type(type);
  std::string reason;
  const GgmlType t = fit_type(req.q4_k_m ? q4_k_m_type(name, layers, tied) : req.type, cols, reason);
  if (why) *why = reason;
  return t;
}

uint32_t convert_file_type(const std::string& type) { return parse_type(type).file_type; }

}  // namespace spore::nlp
