// The tokenizer half of `spore convert`: tokenizer.json (a byte-level BPE) to tokenizer.ggml.*,
// following llama.cpp's converter (get_vocab_base, _set_vocab_gpt2 and gguf-py's SpecialVocab):
//   tokens       every id below the config's vocab_size; ids the tokenizer lacks are "[PAD<id>]"
//   token_type   1 normal, 3 control (added tokens marked special or looking like <|...|>),
//                4 user-defined (other added tokens), 5 unused (the padding ids)
//   merges       "a b" strings (pair-form merges joined, spaces inside written as U+0120)
//   pre          the pre-tokenizer's name, recognised from its regexes in llama.cpp's table
//                (llama.cpp hashes the tokenizer's output on a probe text instead)
//   ids          bos/eos/unk/sep/pad/cls/mask from tokenizer_config.json's *_token strings
//                (looked up among the added tokens), else config.json's *_token_id
//   add_*_token  from the post-processor (ByteLevel: false; TemplateProcessing: its first and
//                last special tokens), else tokenizer_config.json's add_bos_token/add_eos_token
#include <fstream>
#include <algorithm>
#include <map>
#include <optional>
#include <sstream>

#include "convert_internal.h"
#include "nlp/tokenizer/gguf_pre_table.h"
#include "spore/error.h"

namespace spore::nlp::convert {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

enum TokenType : int32_t { kNormal = 1, kControl = 3, kUserDefined = 4, kUnused = 5 };

bool looks_special(const std::string& t) {
  auto starts = [&](const char* p) { return t.rfind(p, 0) == 0; };
  auto ends = [&](const std::string& s) { return t.size() >= s.size() && t.compare(t.size() - s.size(), s.size(), s) == 0; };
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (starts("<|") && ends("|>")) return true;
  if (starts("<\xEF\xBD\x9C") && ends("\xEF\xBD\x9C>")) return true;  // <｜...｜> (deepseek)
  return starts("<unused") && ends(">");
}

// The regexes tokenizer.json's pre-tokenizer runs, in order, spelled as llama.cpp's table spells
// them: a Split's own regex, ByteLevel's built-in one (use_regex) as GPT-2's row, Digits as \p{N}
// (one by one) or \p{N}+. Empty when a part has no regex form (the caller names it).
std::optional<std::vector<std::string>> pre_tokenizer_regexes(const json& pre, bool& byte_level) {
  std::vector<json> parts;
  if (pre.is_object() && pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
      pre["pretokenizers"].is_array())
    for (const json& p : pre["pretokenizers"]) parts.push_back(p);
  else if (pre.is_object())
    parts.push_back(pre);
  std::vector<std::string> regexes;
  for (const json& p : parts) {
    const std::string type = p.is_object() ? p.value("type", "") : "";
    if (type == "Split" && p.contains("pattern") && p["pattern"].is_object() && p["pattern"].contains("Regex") &&
        p["pattern"]["Regex"].is_string()) {
      regexes.push_back(p["pattern"]["Regex"].get<std::string>());
    } else if (type == "ByteLevel") {
      byte_level = true;
      if (p.value("use_regex", true)) regexes.push_back(detail::find_gguf_pre_tokenizer("gpt-2")->regexes[0]);
    } else if (type == "Digits") {
      regexes.push_back(p.value("individual_digits", false) ? "\\p{N}" : "\\p{N}+");
    } else {
      return std::nullopt;
    }
  }
  return regexes;
}

bool normalises_to_nfc(const json& tok) {
  const json& n = tok.value("normalizer", json());
  if (!n.is_object()) return false;
  if (n.value("type", "") == "NFC") return true;
  if (n.value("type", "") == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array())
    for (const json& part : n["normalizers"])
      if (part.is_object() && part.value("type", "") == "NFC") return true;
  return false;
}

// llama.cpp's converter names a pre-tokenizer by hashing the tokenizer's output on a probe text,
// which only knows published tokenizers. Here the name is the first of the table row (NOTE [GGUF
// pre-tokenizers]) whose regexes, NFC normalisation and ignore_merges are the tokenizer.json's:
// the loader then runs exactly what tokenizer.json runs, whatever the model was called.
std::string pre_tokenizer_name(const json& tok, const fs::path& file) {
  const json& pre = tok.value("pre_tokenizer", json());
  bool byte_level = false;
  const auto regexes = pre_tokenizer_regexes(pre, byte_level);
  const bool nfc = normalises_to_nfc(tok);
  const bool ignore_merges = tok.value("model", json::object()).value("ignore_merges", false);
  if (regexes && byte_level)
    for (const detail::GgufPreTokenizer& row : detail::gguf_pre_tokenizers()) {
      if (row.nfc != nfc || row.ignore_merges != ignore_merges || row.regexes.size() != regexes->size()) continue;
      if (std::equal(row.regexes.begin(), row.regexes.end(), regexes->begin())) return row.names[0];
    }
  throw Error(ErrorCode::kUnsupported,
              "'" + file.string() + "': the pre-tokenizer " + pre.dump().substr(0, 300) +
                  " (byte-level: " + (byte_level ? "yes" : "no") + ", NFC: " + (nfc ? "yes" : "no") +
                  ") is none of the " + std::to_string(detail::gguf_pre_tokenizers().size()) +
                  " that llama.cpp's loader knows; convert this model with llama.cpp's convert_hf_to_gguf.py");
}

std::string merge_string(const json& m, const fs::path& file) {
  if (m.is_string()) return m.get<std::string>();
  if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
    std::string out;
    for (int k = 0; k < 2; ++k) {
      if (k) out += ' ';
      for (char c : m[k].get<std::string>()) {
        if (c == ' ') out += "\xC4\xA0";  // U+0120, as gguf-py writes a space inside a merge
        else out += c;
      }
    }
    return out;
  }
  throw Error(ErrorCode::kFormat, "'" + file.string() + "': model.merges holds " + m.dump().substr(0, 80) +
                                      "; expected \"a b\" strings or [\"a\", \"b\"] pairs");
}

// A *_token entry of tokenizer_config.json: a string, or an AddedToken object with "content".
std::optional<std::string> token_text(const json& entry) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") && entry["content"].is_string())
    return entry["content"].get<std::string>();
  return std::nullopt;
}

}  // namespace

json read_json_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIO, "cannot read '" + path.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, false);
  if (j.is_discarded())
    throw Error(ErrorCode::kFormat, "'" + path.string() + "' is not valid JSON; re-download the model's files");
  return j;
}

size_t add_tokenizer_metadata(GgufWriter& w, const fs::path& dir, int64_t vocab_size, const json& config) {
  const fs::path tok_path = dir / "tokenizer.json";
  if (!fs::exists(tok_path))
    throw Error(ErrorCode::kIO, "'" + dir.string() + "' has no tokenizer.json; spore convert writes the tokenizer "
                                                     "into the GGUF file and needs it (byte-level BPE)");
  const json tok = read_json_file(tok_path);
  const json model = tok.value("model", json());
  if (!model.is_object() || model.value("type", "") != "BPE" || !model.contains("vocab") || !model["vocab"].is_object())
    throw Error(ErrorCode::kUnsupported, "'" + tok_path.string() + "': model.type is not BPE with a vocab; "
                                         "spore convert writes byte-level BPE tokenizers (tokenizer.ggml.model gpt2)");
  const std::string pre = pre_tokenizer_name(tok, tok_path);

  // id -> (text, type)
  std::vector<std::string> tokens((size_t)vocab_size);
  std::vector<int32_t> types((size_t)vocab_size, kUnused);
  std::vector<bool> have((size_t)vocab_size, false);
  auto place = [&](int64_t id, const std::string& text, int32_t type, const char* where) {
    if (id < 0 || id >= vocab_size)
      throw Error(ErrorCode::kFormat, "'" + tok_path.string() + "': " + where + " '" + text + "' has id " +
                                          std::to_string(id) + ", outside config.json's vocab_size " +
                                          std::to_string(vocab_size));
    tokens[(size_t)id] = text;
    types[(size_t)id] = type;
    have[(size_t)id] = true;
  };
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    if (!it.value().is_number_integer())
      throw Error(ErrorCode::kFormat, "'" + tok_path.string() + "': model.vocab['" + it.key() + "'] is not an id");
    place(it.value().get<int64_t>(), it.key(), kNormal, "vocabulary token");
  }
  const json added = tok.value("added_tokens", json::array());
  for (const json& a : added) {
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
        !a["content"].is_string())
      throw Error(ErrorCode::kFormat, "'" + tok_path.string() + "': an added_tokens entry lacks an integer id or "
                                                                "a string content: " + a.dump().substr(0, 120));
    std::string text = a["content"].get<std::string>();
    const bool special = a.value("special", false);
    int32_t type = kControl;
    if (!special && !looks_special(text)) {
      type = kUserDefined;
      // SentencePiece's word marker U+2581 back to a space, built afresh rather than with
      // std::string::replace (GCC 12 reports a false -Wrestrict on that at -O3).
      std::string spaced;
      for (size_t i = 0; i < text.size();) {
        if (text.compare(i, 3, "\xE2\x96\x81") == 0) {
          spaced += ' ';
          i += 3;
        } else {
          spaced += text[i++];
        }
      }
      text = std::move(spaced);
    }
    place(a["id"].get<int64_t>(), text, type, "added token");
  }
  for (int64_t i = 0; i < vocab_size; ++i)
    if (!have[(size_t)i]) tokens[(size_t)i] = "[PAD" + std::to_string(i) + "]";

  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", gguf_strings(tokens));
  w.set("tokenizer.ggml.token_type", gguf_int32s(types));

  std::vector<std::string> merges;
  if (model.contains("merges") && model["merges"].is_array())
    for (const json& m : model["merges"]) merges.push_back(merge_string(m, tok_path));
  if (!merges.empty()) w.set("tokenizer.ggml.merges", gguf_strings(merges));

  // Special token ids and add_*_token (SpecialVocab's order: tokenizer.json + tokenizer_config.json
  // first, then config.json for the types still unset).
  const fs::path tc_path = dir / "tokenizer_config.json";
  const json tc = fs::exists(tc_path) ? read_json_file(tc_path) : json::object();
  std::map<std::string, bool> add_special;
  if (const json& pp = tok.value("post_processor", json()); pp.is_object()) {
    std::vector<json> procs;
    if (pp.contains("processors") && pp["processors"].is_array())
      for (const json& p : pp["processors"]) procs.push_back(p);
    else
      procs.push_back(pp);
    for (const json& p : procs) {
      if (!p.is_object()) continue;
      const std::string type = p.value("type", "");
      if (type == "ByteLevel") {
        add_special.emplace("bos", false);
        add_special.emplace("eos", false);
      } else if (type == "TemplateProcessing" && p.contains("single") && p["single"].is_array() &&
                 p["single"].size() > 1) {
        const json& single = p["single"];
        auto special_id = [](const json& e) -> std::string {
          if (e.is_object() && e.contains("SpecialToken") && e["SpecialToken"].is_object())
            return e["SpecialToken"].value("id", "");
          return "";
        };
        const std::string first = special_id(single.front()), last = special_id(single.back());
        const auto bos = tc.is_object() && tc.contains("bos_token") ? token_text(tc["bos_token"]) : std::nullopt;
        const auto eos = tc.is_object() && tc.contains("eos_token") ? token_text(tc["eos_token"]) : std::nullopt;
        if (!first.empty()) add_special["bos"] = bos && *bos == first;
        if (!last.empty()) add_special["eos"] = eos && *eos == last;
      }
    }
  }
  std::map<std::string, int64_t> ids;
  static const char* kTypes[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
  if (tc.is_object()) {
    for (const char* typ : kTypes) {
      const std::string add_key = std::string("add_") + typ + "_token";
      if (tc.contains(add_key) && tc[add_key].is_boolean()) add_special.emplace(typ, tc[add_key].get<bool>());
      const std::string key = std::string(typ) + "_token";
      if (!tc.contains(key)) continue;
      const auto text = token_text(tc[key]);
      if (!text) continue;
      for (const json& a : added)
        if (a["content"].get<std::string>() == *text) {
          ids.emplace(typ, a["id"].get<int64_t>());
          break;
        }
    }
  }
  for (const char* typ : kTypes) {
    const std::string key = std::string(typ) + "_token_id";
    if (config.contains(key) && config[key].is_number_integer()) ids.emplace(typ, config[key].get<int64_t>());
  }
  static const std::map<std::string, std::string> kIdKey = {
      {"bos", "tokenizer.ggml.bos_token_id"}, {"eos", "tokenizer.ggml.eos_token_id"},
      {"unk", "tokenizer.ggml.unknown_token_id"}, {"sep", "tokenizer.ggml.seperator_token_id"},
      {"pad", "tokenizer.ggml.padding_token_id"}, {"cls", "tokenizer.ggml.cls_token_id"},
      {"mask", "tokenizer.ggml.mask_token_id"}};
  for (const char* typ : kTypes) {
    auto it = ids.find(typ);
    if (it == ids.end()) continue;
    if (it->second < 0 || it->second >= vocab_size)
      throw Error(ErrorCode::kFormat, "'" + dir.string() + "': the " + typ + " token id " + std::to_string(it->second) +
                                          " is outside the vocabulary of " + std::to_string(vocab_size));
    w.set_u32(kIdKey.at(typ), (uint32_t)it->second);
  }
  for (const char* typ : {"bos", "eos", "sep"})
    if (auto it = add_special.find(typ); it != add_special.end())
      w.set_bool(std::string("tokenizer.ggml.add_") + typ + "_token", it->second);

  // The chat template: tokenizer_config.json's, else chat_template.jinja beside it.
  if (tc.is_object() && tc.contains("chat_template") && tc["chat_template"].is_string()) {
    w.set_string("tokenizer.chat_template", tc["chat_template"].get<std::string>());
  } else if (fs::exists(dir / "chat_template.jinja")) {
    std::ifstream in(dir / "chat_template.jinja", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    w.set_string("tokenizer.chat_template", ss.str());
  }
  return merges.size();
}

}  // namespace spore::nlp::convert
