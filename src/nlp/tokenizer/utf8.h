// UTF-8 and character-class helpers shared by the tokenizer stages (NOTE [Tokenizers]).
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace spore::nlp::detail {

inline constexpr size_t kValidUtf8 = static_cast<size_t>(-1);

// Byte offset of the first byte that does not start a valid UTF-8 sequence (overlongs,
// surrogates and code points past U+10FFFF are invalid), or kValidUtf8.
size_t find_invalid_utf8(std::string_view s);
// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes U+FFFD.
std::string utf8_lossy(std::string_view s);

// The code point starting at s[i] of valid UTF-8; advances i past it.
inline uint32_t next_code_point(std::string_view s, size_t& i) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  uint32_t c = p[0];
  if (c < 0x80) {
    i += 1;
    return c;
  }
  if (c < 0xE0) {
    i += 2;
    return ((c & 0x1F) << 6) | (p[1] & 0x3F);
  }
  if (c < 0xF0) {
    i += 3;
    return ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
  }
  i += 4;
  return ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
}
// Length of the UTF-8 sequence a lead byte starts (1 for anything that is not a lead byte).
inline size_t utf8_length(unsigned char lead) {
  return lead < 0xC0 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}
void append_utf8(std::string& out, uint32_t cp);

// Rust's char::is_whitespace (the Unicode White_Space property), as Hugging Face uses it for
// lstrip/rstrip of added tokens.
bool is_whitespace(uint32_t cp);
// Rust's char::is_alphanumeric or '_': Hugging Face's word character for single_word tokens.
bool is_word_char(uint32_t cp);

// GPT-2's byte-to-character table: printable Latin-1 bytes map to themselves, the other 68 to
// U+0100 upwards, so that every byte has a visible character in the vocabulary.
const std::array<uint32_t, 256>& byte_to_unicode();
// The inverse, for decoding: -1 for characters that are not in the table.
int unicode_to_byte(uint32_t cp);
// The byte-level spelling of raw bytes (each byte as its table character, UTF-8 encoded).
std::string bytes_to_byte_level(std::string_view bytes);

// SentencePiece's byte-fallback token for byte `b`: "<0xHH>", upper-case hex.
std::string byte_token(int b);
// The byte a "<0xHH>" token stands for (either case of hex digit), or -1 for any other string.
int byte_token_value(std::string_view token);

}  // namespace spore::nlp::detail
