// Decoders, each Hugging Face's decode_chain: ByteLevel, ByteFallback, Fuse, Strip, Replace,
// Metaspace. The chain runs over the token strings; the result is their concatenation.
#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"

namespace spore::nlp::detail {

namespace {

const char kReplacementChar[] = "\xEF\xBF\xBD";

void byte_level(std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    const size_t mark = bytes.size();
    size_t i = 0;
    bool mapped = true;
    while (i < t.size()) {
      const size_t len = utf8_length((unsigned char)t[i]);
      if (i + len > t.size()) {
        mapped = false;
        break;
      }
      const int b = unicode_to_byte(next_code_point(t, i));
      if (b < 0) {
        mapped = false;
        break;
      }
      bytes += (char)b;
    }
    // A token with a character outside the byte table (an added token) is taken as it is.
    if (!mapped) {
      bytes.resize(mark);
      bytes += t;
    }
  }
  tokens.assign(1, utf8_lossy(bytes));
}

void byte_fallback(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string pending;
  auto flush = [&] {
    if (pending.empty()) return;
    if (find_invalid_utf8(pending) == kValidUtf8) {
      out.push_back(pending);
    } else {
      // Hugging Face: bytes that do not form UTF-8 become one U+FFFD per byte token.
      for (size_t k = 0; k < pending.size(); ++k) out.emplace_back(kReplacementChar);
    }
    pending.clear();
  };
  for (std::string& t : tokens) {
    if (const int b = byte_token_value(t); b >= 0) {
      pending += (char)b;
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens = std::move(out);
}

void replace_in(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  size_t pos = 0;
  while ((pos = s.find(from, pos)) != std::string::npos) {
    s.replace(pos, from.size(), to);
    pos += to.size();
  }
}

void strip(const DecStrip& d, std::string& t) {
  // Up to `start` leading and `stop` trailing copies of the content character.
  size_t b = 0, e = t.size();
  for (size_t k = 0; k < d.start && t.compare(b, d.content.size(), d.content) == 0 && b < e; ++k)
    b += d.content.size();
  for (size_t k = 0; k < d.stop && e >= b + d.content.size() &&
                     t.compare(e - d.content.size(), d.content.size(), d.content) == 0;
       ++k)
    e -= d.content.size();
  t = t.substr(b, e - b);
}

// tokenizers' WordPiece decoder cleanup (decoders/wordpiece.rs).
void wordpiece_cleanup(std::string& t) {
  static const char* const pairs[][2] = {{" .", "."},     {" ?", "?"},     {" !", "!"},     {" ,", ","},
                                         {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
                                         {" 's", "'s"},   {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& p : pairs) replace_in(t, p[0], p[1]);
}

}  // namespace

std::string decode_tokens(const std::vector<DecStep>& steps, bool has_decoder,
                          std::vector<std::string> tokens) {
  if (!has_decoder) {
    // Without a decoder Hugging Face joins the tokens with spaces.
    std::string out;
    for (size_t k = 0; k < tokens.size(); ++k) {
      if (k) out += ' ';
      out += tokens[k];
    }
    return out;
  }
  for (const DecStep& step : steps) {
    if (std::holds_alternative<DecByteLevel>(step)) {
      byte_level(tokens);
    } else if (std::holds_alternative<DecByteFallback>(step)) {
      byte_fallback(tokens);
    } else if (std::holds_alternative<DecFuse>(step)) {
      std::string all;
      for (const std::string& t : tokens) all += t;
      tokens.assign(1, std::move(all));
    } else if (auto* s = std::get_if<DecStrip>(&step)) {
      for (std::string& t : tokens) strip(*s, t);
    } else if (auto* r = std::get_if<DecReplace>(&step)) {
      for (std::string& t : tokens) replace_in(t, r->pattern, r->content);
    } else if (auto* w = std::get_if<DecWordPiece>(&step)) {
      for (size_t k = 0; k < tokens.size(); ++k) {
        if (k != 0) {
          if (!w->prefix.empty() && tokens[k].starts_with(w->prefix))
            tokens[k].erase(0, w->prefix.size());
          else
            tokens[k].insert(tokens[k].begin(), ' ');
        }
        if (w->cleanup) wordpiece_cleanup(tokens[k]);
      }
    } else if (auto* m = std::get_if<DecMetaspace>(&step)) {
      for (size_t k = 0; k < tokens.size(); ++k) {
        replace_in(tokens[k], m->replacement, " ");
        if (k == 0 && m->strip_first_space && !tokens[k].empty() && tokens[k][0] == ' ')
          tokens[k].erase(0, 1);
      }
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

}  // namespace spore::nlp::detail
