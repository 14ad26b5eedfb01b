// Loading chat templates and rendering them the way transformers' apply_chat_template prepares
// its inputs (chat_template_utils.py: _normalize_chat_messages, _alias_reasoning_fields,
// render_jinja_template; tokenization_utils_base.py: special_tokens_map under the kwargs).
#include "spore/nlp/chat_template.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/json_depth.h"
#include "nlp/template/ast.h"
#include "nlp/template/interpreter.h"
#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::nlp {

using Json = nlohmann::ordered_json;
using tmpl::Value;

struct ChatTemplate::Impl {
  std::vector<std::pair<std::string, std::shared_ptr<const tmpl::Program>>> programs;
  std::map<std::string, std::string> special_tokens;
};

namespace {

const char* kSpecialTokenNames[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                    "pad_token", "cls_token", "mask_token"};

// Recursion is bounded: every JSON here came through parse_json (at most kMaxJsonDepth deep), and
// make_list / Dict::push check the nesting as the values are built.
Value from_json(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return Value(tmpl::None{});
    case Json::value_t::boolean: return Value(j.get<bool>());
    case Json::value_t::number_integer: return Value(j.get<std::int64_t>());
    case Json::value_t::number_unsigned: {
      auto u = j.get<std::uint64_t>();
      if (u > static_cast<std::uint64_t>(INT64_MAX)) return Value(static_cast<double>(u));
      return Value(static_cast<std::int64_t>(u));
    }
    case Json::value_t::number_float: return Value(j.get<double>());
    case Json::value_t::string: return Value(j.get<std::string>());
    case Json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& e : j) items.push_back(from_json(e));
      return tmpl::make_list(std::move(items));
    }
    case Json::value_t::object: {
      auto d = std::make_shared<tmpl::Dict>();
      d->items.reserve(j.size());
      for (const auto& [k, v] : j.items()) d->push(Value(k), from_json(v));
      return Value(d);
    }
    default: throw Error(ErrorCode::kFormat, "chat template input: unsupported JSON value (binary)");
  }
}

// Under the one depth bound (NOTE [Hostile JSON]): copies, dump() and from_json recurse.
Json parse_json(std::string_view text, const char* what) {
  try {
    return io::parse_json_bounded<Json>(text);
  } catch (const io::JsonTooDeep& e) {
    throw Error(ErrorCode::kFormat, std::string(what) + ": " + e.what() + "; no chat input needs that many");
  } catch (const Json::exception& e) {
    throw Error(ErrorCode::kFormat, std::string(what) + " is not valid JSON: " + e.what());
  }
}

// transformers: messages with None-valued keys lose those keys; then the first of
// reasoning_content/thinking/reasoning that is set becomes {"thinking": r, **m, "reasoning_content": r}.
Value prepare_messages(const Json& messages) {
  if (!messages.is_array())
    throw Error(ErrorCode::kFormat, "chat messages must be a JSON array of message objects, like "
                                    "[{\"role\": \"user\", \"content\": \"Hi\"}]");
  std::vector<Value> out;
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    if (!m.is_object())
      throw Error(ErrorCode::kFormat, "chat message " + std::to_string(i) + " is not a JSON object (got " +
                                          m.type_name() + "); each message is {\"role\": ..., \"content\": ...}");
    Json kept = Json::object();
    for (const auto& [k, v] : m.items())
      if (!v.is_null()) kept[k] = v;
    const Json* reasoning = nullptr;
    for (const char* f : {"reasoning_content", "thinking", "reasoning"}) {
      if (kept.contains(f)) {
        reasoning = &kept[f];
        break;
      }
    }
    if (reasoning) {
      Json r = *reasoning;
      Json aliased = Json::object();
      aliased["thinking"] = r;
      for (const auto& [k, v] : kept.items()) aliased[k] = v;
      aliased["reasoning_content"] = r;
      kept = std::move(aliased);
    }
    out.push_back(from_json(kept));
  }
  return tmpl::make_list(std::move(out));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIO, "cannot read chat template file " + path.string() + " (missing or unreadable)");
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> special_tokens_of(const Json& config) {
  std::map<std::string, std::string> out;
  for (const char* name : kSpecialTokenNames) {
    auto it = config.find(name);
    if (it == config.end() || it->is_null()) continue;
    if (it->is_string()) {
      out[name] = it->get<std::string>();
    } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
      out[name] = (*it)["content"].get<std::string>();  // an AddedToken written out
    }
  }
  return out;
}

ChatTemplate load_config(const std::filesystem::path& path) {
  Json config = parse_json(read_file(path), path.string().c_str());
  if (!config.is_object()) throw Error(ErrorCode::kFormat, path.string() + " is not a JSON object");
  auto tokens = special_tokens_of(config);
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null())
    throw Error(ErrorCode::kFormat, path.string() + " has no \"chat_template\" (this tokenizer defines no prompt "
                                                    "format); pass a chat_template.jinja file instead");
  if (it->is_string()) return ChatTemplate::from_text(it->get<std::string>(), tokens);
  if (it->is_array()) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& e : *it) {
      if (!e.is_object() || !e.contains("name") || !e.contains("template") || !e["name"].is_string() ||
          !e["template"].is_string())
        throw Error(ErrorCode::kFormat, path.string() + ": each entry of the \"chat_template\" list needs "
                                                        "string fields \"name\" and \"template\"");
      named.emplace_back(e["name"].get<std::string>(), e["template"].get<std::string>());
    }
    return ChatTemplate::from_named(named, tokens);
  }
  throw Error(ErrorCode::kFormat, path.string() + ": \"chat_template\" must be a string or a list of "
                                                  "{\"name\", \"template\"} objects");
}

std::map<std::string, std::string> tokens_beside(const std::filesystem::path& dir) {
  std::filesystem::path cfg = dir / "tokenizer_config.json";
  if (!std::filesystem::exists(cfg)) return {};
  Json config = parse_json(read_file(cfg), cfg.string().c_str());
  return config.is_object() ? special_tokens_of(config) : std::map<std::string, std::string>{};
}

}  // namespace

ChatTemplate ChatTemplate::from_text(std::string_view text, std::map<std::string, std::string> special_tokens) {
  return from_named({{"default", std::string(text)}}, std::move(special_tokens));
}

ChatTemplate ChatTemplate::from_named(const std::vector<std::pair<std::string, std::string>>& named,
                                      std::map<std::string, std::string> special_tokens) {
  auto impl = std::make_shared<Impl>();
  for (const auto& [name, text] : named) impl->programs.emplace_back(name, tmpl::parse(text));
  impl->special_tokens = std::move(special_tokens);
  return ChatTemplate(std::move(impl));
}

namespace {

// GGUF keeps the template in `tokenizer.chat_template` and the special tokens as ids into
// `tokenizer.ggml.tokens` (llama.cpp's convention): bos_token and friends are those tokens' text.
std::map<std::string, std::string> gguf_special_tokens(const GgufFile& g) {
  std::map<std::string, std::string> out;
  if (!g.contains("tokenizer.ggml.tokens")) return out;
  const std::vector<std::string> tokens = g.get_strings("tokenizer.ggml.tokens");
  for (const char* name : {"bos", "eos", "unknown", "padding"}) {
    const std::string key = std::string("tokenizer.ggml.") + name + "_token_id";
    if (!g.contains(key)) continue;
    const int64_t id = g.get_int(key);
    if (id < 0 || id >= (int64_t)tokens.size())
      throw Error(ErrorCode::kFormat, g.source() + ": " + key + " = " + std::to_string(id) + " is outside the " +
                                          std::to_string(tokens.size()) + "-token vocabulary");
    const std::string var = std::string(name) == "unknown" ? "unk_token" : std::string(name) == "padding" ? "pad_token"
                                                                                                          : std::string(name) + "_token";
    out[var] = tokens[(size_t)id];
  }
  return out;
}

}  // namespace

ChatTemplate ChatTemplate::load_gguf(const std::filesystem::path& path) {
  const GgufFile g(path);
  if (!g.contains("tokenizer.chat_template"))
    throw Error(ErrorCode::kFormat, path.string() + " has no tokenizer.chat_template: the model ships no chat template; "
                                                    "pass one as a .jinja file");
  return from_text(g.get_string("tokenizer.chat_template"), gguf_special_tokens(g));
}

ChatTemplate ChatTemplate::load(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  if (fs::is_directory(path)) {
    if (fs::exists(path / "chat_template.jinja"))
      return from_text(read_file(path / "chat_template.jinja"), tokens_beside(path));
    if (fs::exists(path / "tokenizer_config.json")) return load_config(path / "tokenizer_config.json");
    throw Error(ErrorCode::kIO, "model directory " + path.string() +
                                    " has neither chat_template.jinja nor tokenizer_config.json");
  }
  std::string ext = path.extension().string();
  if (ext == ".gguf") return load_gguf(path);
  if (ext == ".jinja") return from_text(read_file(path), tokens_beside(path.parent_path()));
  if (ext == ".json") return load_config(path);
  if (!fs::exists(path)) throw Error(ErrorCode::kIO, "chat template path " + path.string() + " does not exist");
  throw Error(ErrorCode::kFormat, path.string() + " is not a tokenizer_config.json, a .jinja file or a model directory");
}

const std::map<std::string, std::string>& ChatTemplate::special_tokens() const { return impl_->special_tokens; }

std::vector<std::string> ChatTemplate::names() const {
  std::vector<std::string> out;
  for (const auto& p : impl_->programs) out.push_back(p.first);
  return out;
}

std::string ChatTemplate::render(std::string_view messages_json, bool add_generation_prompt,
                                 std::string_view kwargs_json, const RenderOptions& options) const {
  Json messages = parse_json(messages_json, "the chat messages");
  Json kwargs = parse_json(kwargs_json.empty() ? std::string_view("{}") : kwargs_json, "the template kwargs");
  if (!kwargs.is_object())
    throw Error(ErrorCode::kFormat, "the template kwargs must be a JSON object, like {\"enable_thinking\": false}");
  Value tools(tmpl::None{}), documents(tmpl::None{});
  if (kwargs.contains("tools")) tools = from_json(kwargs["tools"]);
  if (kwargs.contains("documents")) documents = from_json(kwargs["documents"]);

  // transformers picks "tool_use" when tools are given and it exists, else "default".
  const tmpl::Program* program = nullptr;
  if (impl_->programs.size() == 1) {
    program = impl_->programs[0].second.get();
  } else {
    for (const auto& [name, p] : impl_->programs)
      if (name == "tool_use" && !tools.is_none()) program = p.get();
    for (const auto& [name, p] : impl_->programs)
      if (!program && name == "default") program = p.get();
    if (!program)
      throw Error(ErrorCode::kValue, "this tokenizer has several chat templates and none named \"default\"; "
                                     "pick one with ChatTemplate::from_text");
  }

  tmpl::Interpreter in(options.step_limit, options.max_output_bytes);
  tmpl::Scope& root = *in.root;
  tmpl::install_globals(root);
  for (const auto& [k, v] : impl_->special_tokens) root.set(k, Value(v));
  for (const auto& [k, v] : kwargs.items())
    if (k != "tools" && k != "documents") root.set(k, from_json(v));
  root.set("messages", prepare_messages(messages));
  root.set("tools", tools);
  root.set("documents", documents);
  root.set("add_generation_prompt", Value(add_generation_prompt));

  std::string out;
  in.out = &out;
  try {
    in.exec_body(program->body);
  } catch (...) {
    root.vars.clear();  // values may refer back to scopes; break the cycles
    throw;
  }
  root.vars.clear();
  return out;
}

}  // namespace spore::nlp
