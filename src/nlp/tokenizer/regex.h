// A compiled PCRE2 pattern in UTF mode with Unicode properties (UCP), JIT-compiled: the
// pre-tokenizers' `Split` regexes and the Replace normalizer's patterns, run exactly as written.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace spore::nlp::detail {

class Regex {
 public:
  // kFormat naming `field` and PCRE2's message with the offset when PCRE2 rejects the pattern.
  // `literal` matches the pattern text as it is (the {"String": ...} form of tokenizer.json).
  Regex(std::string_view pattern, bool literal, const std::string& field);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // Calls on_match(begin, end) for each non-overlapping match in `text` (valid UTF-8), left to
  // right; an empty match advances by one character.
  template <class F>
  void for_each_match(std::string_view text, F&& on_match) const {
    size_t pos = 0;
    size_t b, e;
    while (pos <= text.size() && next_match(text, pos, b, e)) {
      on_match(b, e);
      if (e == b) {
        if (e >= text.size()) break;
        pos = e + 1;
        while (pos < text.size() && ((unsigned char)text[pos] & 0xC0) == 0x80) ++pos;
      } else {
        pos = e;
      }
    }
  }
  const std::string& pattern() const { return pattern_; }

 private:
  bool next_match(std::string_view text, size_t from, size_t& b, size_t& e) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string pattern_;
};

}  // namespace spore::nlp::detail
