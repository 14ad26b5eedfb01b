// Added tokens found in text as Hugging Face finds them: leftmost-longest over all patterns, then
// single_word (no word character on either side), lstrip / rstrip (the match swallows the
// whitespace before / after it).
#include <algorithm>

#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"

namespace spore::nlp::detail {

namespace {

uint32_t code_point_before(std::string_view s, size_t pos) {
  size_t b = pos - 1;
  while (b > 0 && ((unsigned char)s[b] & 0xC0) == 0x80) --b;
  return next_code_point(s, b);
}

}  // namespace

void AddedTokenMatcher::build(const std::vector<AddedToken>& tokens, bool normalized_set,
                              const std::vector<NormStep>* normalizer) {
  patterns_.clear();
  for (auto& v : by_first_byte_) v.clear();
  for (const AddedToken& t : tokens) {
    if (t.normalized != normalized_set || t.content.empty()) continue;
    std::string text = t.content;
    if (normalized_set && normalizer) normalize(*normalizer, text);
    if (text.empty()) continue;
    patterns_.push_back({std::move(text), &t});
  }
  for (size_t k = 0; k < patterns_.size(); ++k)
    by_first_byte_[(unsigned char)patterns_[k].text[0]].push_back((int32_t)k);
}

std::vector<AddedTokenMatcher::Piece> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Piece> out;
  size_t start_offset = 0;  // end of the last token taken
  size_t pos = 0;
  while (pos < text.size()) {
    // Leftmost-longest: the first position where any pattern matches, its longest pattern.
    const auto& candidates = by_first_byte_[(unsigned char)text[pos]];
    const Pattern* best = nullptr;
    for (int32_t k : candidates) {
      const Pattern& p = patterns_[k];
      if (p.text.size() <= text.size() - pos && text.compare(pos, p.text.size(), p.text) == 0 &&
          (!best || p.text.size() > best->text.size()))
        best = &p;
    }
    if (!best) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + best->text.size();
    pos = stop;  // matches do not overlap, whether or not this one is kept
    const AddedToken& tok = *best->token;
    if (tok.single_word) {
      const bool start_ok = start == 0 || !is_word_char(code_point_before(text, start));
      size_t after = stop;
      const bool stop_ok = stop == text.size() || !is_word_char(next_code_point(text, after));
      if (!start_ok || !stop_ok) continue;
    }
    if (tok.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t b = s - 1;
        while (b > 0 && ((unsigned char)text[b] & 0xC0) == 0x80) --b;
        size_t i = b;
        if (!is_whitespace(next_code_point(text, i))) break;
        s = b;
      }
      start = std::max(s, start_offset);
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t i = stop;
        if (!is_whitespace(next_code_point(text, i))) break;
        stop = i;
      }
      pos = stop;
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, tok.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
  return out;
}

}  // namespace spore::nlp::detail
