// Fine-tuning data (NOTE [Fine-tuning data]): JSONL records, chat (`messages`) or
// prompt/completion, read with the one JSON depth bound (NOTE [Hostile JSON]), and tokenised with
// the loss mask the record's form implies.
#include <cstdio>
#include <string>
#include <string_view>

#include "io/json_depth.h"
#include "spore/error.h"
#include "spore/nlp/chat_template.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/tokenizer.h"

namespace spore::nlp {

namespace {

// The offset of the first byte that does not start or continue a valid UTF-8 sequence (overlong
// forms, surrogates and values past U+10FFFF included), or npos.
size_t invalid_utf8_at(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0, min = 0;
    if (c < 0x80) { ++i; continue; }
    if ((c & 0xE0) == 0xC0) { n = 1; cp = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { n = 2; cp = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { n = 3; cp = c & 0x07; min = 0x10000; }
    else return i;
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return i;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (d & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += n + 1;
  }
  return std::string_view::npos;
}

[[noreturn]] void fail(const std::string& source, int64_t line, const std::string& what) {
  throw Error(ErrorCode::kFormat, source + ":" + std::to_string(line) + ": " + what);
}

}  // namespace

std::vector<DataRecord> parse_jsonl(std::string_view text, const std::string& source) {
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    int64_t line = 1;
    for (size_t i = 0; i < bad; ++i) line += text[i] == '\n';
    fail(source, line, "the data is not UTF-8 (invalid byte 0x" +
                           [&] { char b[3]; std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(text[bad])); return std::string(b); }() +
                           " at byte offset " + std::to_string(bad) + "); re-encode the file as UTF-8");
  }
  std::vector<DataRecord> out;
  int64_t line = 0;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view raw = text.substr(start, end - start);
    start = end + 1;
    ++line;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (raw.find_first_not_of(" \t") == std::string_view::npos) continue;
    nlohmann::json j;
    try {
      j = io::parse_json_bounded(raw);
    } catch (const io::JsonTooDeep& e) {
      fail(source, line, e.what());
    } catch (const nlohmann::json::exception& e) {
      fail(source, line, std::string("not valid JSON (") + e.what() + "); each line must be one JSON object");
    }
    if (!j.is_object()) fail(source, line, "a record must be a JSON object, got " + std::string(j.type_name()));
    DataRecord r;
    r.line = line;
    const auto msgs = j.find("messages");
    if (msgs != j.end()) {
      if (!msgs->is_array() || msgs->empty()) fail(source, line, "\"messages\" must be a non-empty array of {\"role\", \"content\"}");
      bool assistant = false;
      for (size_t i = 0; i < msgs->size(); ++i) {
        const auto& m = (*msgs)[i];
        const std::string at = "message " + std::to_string(i);
        if (!m.is_object()) fail(source, line, at + " is not an object");
        const auto role = m.find("role"), content = m.find("content");
        if (role == m.end() || !role->is_string()) fail(source, line, at + " has no string \"role\"");
        if (content == m.end() || !content->is_string()) fail(source, line, at + " has no string \"content\"");
        assistant = assistant || role->get_ref<const std::string&>() == "assistant";
      }
      if (!assistant)
        fail(source, line, "the conversation has no assistant turn, so there is nothing to learn; add a message "
                           "with \"role\": \"assistant\" or drop the record");
      r.messages_json = msgs->dump();
    } else {
      const auto p = j.find("prompt"), c = j.find("completion");
      if (p == j.end() && c == j.end())
        fail(source, line, "a record needs \"messages\" (a chat) or \"prompt\" and \"completion\"");
      if (p == j.end() || !p->is_string()) fail(source, line, "\"prompt\" must be a string");
      if (c == j.end() || !c->is_string()) fail(source, line, "\"completion\" must be a string");
      if (c->get_ref<const std::string&>().empty()) fail(source, line, "\"completion\" is empty: nothing to learn");
      r.prompt = p->get<std::string>();
      r.completion = c->get<std::string>();
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw Error(ErrorCode::kFormat, source + ": holds no records (one JSON object per line)");
  return out;
}

namespace {

void append(TrainExample& ex, const std::vector<int32_t>& ids, bool target) {
  ex.ids.insert(ex.ids.end(), ids.begin(), ids.end());
  ex.target.insert(ex.target.end(), ids.size(), static_cast<uint8_t>(target));
}

// A chat: the conversation rendered once, cut where each assistant turn starts (the render of the
// turns before it with the generation prompt) and ends (the render up to and including it); the
// pieces are tokenised in order, the assistant pieces as targets.
TrainExample chat_example(const DataRecord& r, const Tokenizer& tok, const ChatTemplate& tpl, const std::string& source) {
  const nlohmann::json msgs = nlohmann::json::parse(r.messages_json);
  std::string full;
  try {
    full = tpl.render(r.messages_json, false);
  } catch (const Error& e) {
    fail(source, r.line, std::string("the chat template rejects the conversation: ") + e.what());
  }
  TrainExample ex;
  ex.source_line = r.line;
  size_t done = 0;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i]["role"] != "assistant") continue;
    const nlohmann::json before(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i));
    const nlohmann::json upto(msgs.begin(), msgs.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    std::string start, end;
    try {
      start = tpl.render(before.dump(), true);
      end = tpl.render(upto.dump(), false);
    } catch (const Error& e) {
      fail(source, r.line, std::string("the chat template rejects the conversation: ") + e.what());
    }
    if (start.size() < done || end.size() < start.size() || full.compare(0, start.size(), start) != 0 ||
        full.compare(0, end.size(), end) != 0)
      fail(source, r.line, "the chat template does not render this conversation turn by turn (message " +
                               std::to_string(i) + "), so the assistant's tokens cannot be told apart; use "
                               "prompt/completion records");
    append(ex, tok.encode(std::string_view(full).substr(done, start.size() - done), false), false);
    append(ex, tok.encode(std::string_view(full).substr(start.size(), end.size() - start.size()), false), true);
    done = end.size();
  }
  append(ex, tok.encode(std::string_view(full).substr(done), false), false);
  return ex;
}

TrainExample completion_example(const DataRecord& r, const Tokenizer& tok) {
  TrainExample ex;
  ex.source_line = r.line;
  append(ex, tok.encode(r.prompt, true), false);
  std::vector<int32_t> c = tok.encode(r.completion, false);
  if (const auto eos = tok.eos_id()) c.push_back(*eos);
  append(ex, c, true);
  return ex;
}

}  // namespace

std::vector<TrainExample> tokenize_records(const std::vector<DataRecord>& records, const Tokenizer& tokenizer,
                                           const ChatTemplate* chat_template, const DataOptions& options,
                                           const std::string& source, DataReport& report) {
  std::vector<TrainExample> out;
  for (const DataRecord& r : records) {
    ++report.records;
    TrainExample ex;
    if (!r.messages_json.empty()) {
      if (!chat_template)
        fail(source, r.line, "a chat record, but the model has no chat template; give a model with one "
                             "(tokenizer_config.json / chat_template.jinja / GGUF tokenizer.chat_template) or "
                             "use prompt/completion records");
      ex = chat_example(r, tokenizer, *chat_template, source);
    } else {
      ex = completion_example(r, tokenizer);
    }
    if (ex.ids.size() < 2) fail(source, r.line, "the record tokenises to fewer than 2 tokens");
    ex.target[0] = 0;  // nothing predicts the first token
    if (options.max_tokens > 0 && static_cast<int64_t>(ex.ids.size()) > options.max_tokens) {
      if (options.skip_long) {
        ++report.skipped_long;
        continue;
      }
      ex.ids.resize(static_cast<size_t>(options.max_tokens));
      ex.target.resize(static_cast<size_t>(options.max_tokens));
      ++report.truncated;
    }
    int64_t targets = 0;
    for (uint8_t t : ex.target) targets += t;
    if (targets == 0) {  // truncation cut every target away
      ++report.skipped_long;
      continue;
    }
    report.target_tokens += targets;
    report.tokens += static_cast<int64_t>(ex.ids.size());
    out.push_back(std::move(ex));
  }
  report.examples = static_cast<int64_t>(out.size());
  return out;
}

}  // namespace spore::nlp
