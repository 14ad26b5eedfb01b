// Normalizers: Unicode forms through utf8proc, Prepend, Replace, Lowercase, Strip.
#include <utf8proc.h>

#include <cstdlib>

#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

// True when NFC leaves `text` unchanged for a reason cheap to check: every character is below
// U+0300 (nothing there composes or reorders) or in a block of precomposed or unified characters
// (CJK ideographs, kana without the combining sound marks, Hangul syllables) that neither
// decompose nor start a composition. Anything else goes through utf8proc.
bool obviously_nfc(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    if ((unsigned char)text[i] < 0x80) {
      ++i;
      continue;
    }
    const uint32_t cp = next_code_point(text, i);
    if (cp < 0x300) continue;
    if (cp >= 0x4E00 && cp <= 0x9FFF) continue;
    if (cp >= 0x3040 && cp <= 0x30FF && cp != 0x3099 && cp != 0x309A) continue;
    if (cp >= 0xAC00 && cp <= 0xD7A3) continue;
    if (cp >= 0x3000 && cp <= 0x303F) continue;  // CJK punctuation
    if (cp >= 0xFF01 && cp <= 0xFF5E) continue;  // fullwidth forms: NFC-stable (NFKC is not)
    return false;
  }
  return true;
}

void unicode_normalize(UnicodeForm form, std::string& text) {
  if (text.empty()) return;
  if (form == UnicodeForm::kNFC && obviously_nfc(text)) return;
  bool ascii = true;
  for (unsigned char c : text) ascii = ascii && c < 0x80;
  if (ascii) return;  // every form leaves ASCII alone
  int options = UTF8PROC_STABLE;
  switch (form) {
    case UnicodeForm::kNFC: options |= UTF8PROC_COMPOSE; break;
    case UnicodeForm::kNFKC: options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case UnicodeForm::kNFD: options |= UTF8PROC_DECOMPOSE; break;
    case UnicodeForm::kNFKD: options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                   (utf8proc_ssize_t)text.size(), &out, (utf8proc_option_t)options);
  if (n < 0)
    throw Error(ErrorCode::kValue, std::string("Unicode normalisation failed: ") +
                                       utf8proc_errmsg(n));
  text.assign(reinterpret_cast<const char*>(out), (size_t)n);
  std::free(out);
}

void replace_all(const Regex& pattern, const std::string& content, std::string& text) {
  std::string out;
  size_t last = 0;
  bool any = false;
  pattern.for_each_match(text, [&](size_t b, size_t e) {
    if (b == e) return;
    any = true;
    out.append(text, last, b - last);
    out += content;
    last = e;
  });
  if (!any) return;
  out.append(text, last, std::string::npos);
  text = std::move(out);
}

void pad_matches(const Regex& pattern, std::string& text) {
  std::string out;
  size_t last = 0;
  pattern.for_each_match(text, [&](size_t b, size_t e) {
    if (b == e) return;
    out.append(text, last, b - last);
    out += ' ';
    out.append(text, b, e - b);
    out += ' ';
    last = e;
  });
  if (last == 0 && out.empty()) return;
  out.append(text, last, std::string::npos);
  text = std::move(out);
}

void lowercase(std::string& text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const uint32_t cp = next_code_point(text, i);
    append_utf8(out, (uint32_t)utf8proc_tolower((utf8proc_int32_t)cp));
  }
  text = std::move(out);
}

void strip(bool left, bool right, std::string& text) {
  size_t b = 0, e = text.size();
  if (left) {
    while (b < e) {
      size_t i = b;
      if (!is_whitespace(next_code_point(text, i))) break;
      b = i;
    }
  }
  if (right) {
    while (e > b) {
      size_t s = e - 1;
      while (s > b && ((unsigned char)text[s] & 0xC0) == 0x80) --s;
      size_t i = s;
      if (!is_whitespace(next_code_point(text, i))) break;
      e = s;
    }
  }
  text = text.substr(b, e - b);
}

}  // namespace

void normalize(const std::vector<NormStep>& steps, std::string& text) {
  for (const NormStep& step : steps) {
    if (auto* u = std::get_if<NormUnicode>(&step)) {
      unicode_normalize(u->form, text);
    } else if (auto* p = std::get_if<NormPrepend>(&step)) {
      if (!text.empty()) text.insert(0, p->text);  // Hugging Face prepends to non-empty text only
    } else if (auto* r = std::get_if<NormReplace>(&step)) {
      replace_all(r->pattern, r->content, text);
    } else if (std::holds_alternative<NormLowercase>(step)) {
      lowercase(text);
    } else if (auto* s = std::get_if<NormStrip>(&step)) {
      strip(s->left, s->right, text);
    } else if (auto* c = std::get_if<NormPrecompiled>(&step)) {
      text = c->charsmap->normalize(text);
    } else if (auto* n = std::get_if<NormSentencePiece>(&step)) {
      text = n->normalizer.normalize(text);
    } else if (auto* pad = std::get_if<NormPad>(&step)) {
      pad_matches(pad->pattern, text);
    }
  }
}

}  // namespace spore::nlp::detail
