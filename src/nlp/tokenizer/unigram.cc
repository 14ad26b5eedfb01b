// SentencePiece's Unigram model and normaliser (NOTE [Unigram tokenizers]); the layouts and the
// rules are SentencePiece's (normalizer.cc, unigram_model.cc) as llama.cpp's "ugm" vocabulary and
// Hugging Face's Unigram / Precompiled read them.
#include "nlp/tokenizer/unigram.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "nlp/tokenizer/utf8.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

const std::string kEscapedSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
const std::string kReplacementChar = "\xEF\xBF\xBD";

// A darts-clone unit: bits 10-30 the offset to the children (shifted left by 8 when bit 9 is
// set), bit 8 "has a leaf", bits 0-7 (with bit 31) the label; a leaf's unit holds the value in
// bits 0-30.
uint32_t unit_offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }
uint32_t unit_label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
bool unit_has_leaf(uint32_t u) { return (u >> 8) & 1; }
uint32_t unit_value(uint32_t u) { return u & ((1u << 31) - 1); }

// The length of the valid UTF-8 character at text[at], or 0 when the bytes there are not one.
size_t valid_char_length(std::string_view text, size_t at) {
  const size_t n = utf8_length((unsigned char)text[at]);
  if (n == 1) return (unsigned char)text[at] < 0x80 ? 1 : 0;
  if (at + n > text.size()) return 0;
  return find_invalid_utf8(text.substr(at, n)) == kValidUtf8 ? n : 0;
}

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(std::string_view blob, const std::string& where) : where_(where) {
  if (blob.size() < 4)
    throw Error(ErrorCode::kFormat, where + ": the precompiled charsmap has " + std::to_string(blob.size()) +
                                        " bytes; it starts with a 4-byte size");
  uint32_t trie_bytes;
  std::memcpy(&trie_bytes, blob.data(), 4);
  if (trie_bytes % 4 != 0 || trie_bytes > blob.size() - 4 || trie_bytes == 0)
    throw Error(ErrorCode::kFormat, where + ": the precompiled charsmap's double array is " +
                                        std::to_string(trie_bytes) + " bytes in a " + std::to_string(blob.size()) +
                                        "-byte charsmap (not a positive multiple of 4 that fits)");
  units_.resize(trie_bytes / 4);
  std::memcpy(units_.data(), blob.data() + 4, trie_bytes);
  replacements_.assign(blob.substr(4 + trie_bytes));
}

size_t PrecompiledCharsmap::longest_prefix(std::string_view text, std::string_view& replacement) const {
  auto unit = [&](size_t i) {
    if (i >= units_.size())
      throw Error(ErrorCode::kFormat, where_ + ": the precompiled charsmap's double array points outside itself");
    return units_[i];
  };
  size_t best = 0, best_value = 0;
  size_t node = unit_offset(unit(0));
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = (unsigned char)text[i];
    if (c == 0) break;
    node ^= c;
    const uint32_t u = unit(node);
    if (unit_label(u) != c) break;
    node ^= unit_offset(u);
    if (unit_has_leaf(u)) {
      best = i + 1;
      best_value = unit_value(unit(node));
    }
  }
  if (best == 0) return 0;
  if (best_value >= replacements_.size())
    throw Error(ErrorCode::kFormat, where_ + ": a precompiled charsmap entry points past its replacement strings");
  const size_t end = replacements_.find('\0', best_value);
  if (end == std::string::npos)
    throw Error(ErrorCode::kFormat, where_ + ": a precompiled charsmap replacement string is not terminated");
  replacement = std::string_view(replacements_).substr(best_value, end - best_value);
  return best;
}

std::string PrecompiledCharsmap::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t at = 0; at < text.size();) {
    std::string_view rep;
    if (const size_t n = longest_prefix(text.substr(at), rep)) {
      out += rep;
      at += n;
    } else if (const size_t len = valid_char_length(text, at)) {
      out.append(text.substr(at, len));
      at += len;
    } else {
      out += kReplacementChar;
      ++at;
    }
  }
  return out;
}

std::string SentencePieceNormalizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size() * 3 / 2 + 3);
  bool prepended = false, in_word = false;
  for (size_t at = 0; at < text.size();) {
    // A user-defined piece is taken as it is (longest first).
    size_t taken = 0;
    std::string_view piece;
    for (const std::string& u : user_defined)
      if (u.size() > taken && text.compare(at, u.size(), u) == 0) taken = u.size(), piece = u;
    std::string replaced;
    if (taken == 0) {
      std::string_view rep;
      if (charsmap && (taken = charsmap->longest_prefix(text.substr(at), rep))) {
        piece = rep;
      } else if (const size_t len = valid_char_length(text, at)) {
        piece = text.substr(at, len), taken = len;
      } else {
        piece = kReplacementChar, taken = 1;
      }
    }
    for (char c : piece) {
      if (c != ' ') {
        if (!in_word) {
          in_word = true;
          if ((add_dummy_prefix && !prepended) || remove_extra_whitespaces) {
            out += kEscapedSpace;
            prepended = true;
          }
        }
        out += c;
      } else {
        in_word = false;
        if (!remove_extra_whitespaces) out += kEscapedSpace;
      }
    }
    at += taken;
  }
  return out;
}

void UnigramModel::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  struct Best {
    int32_t id;
    size_t from;
    double score;
  };
  // best[i]: the best segmentation of text[0, i) ends with piece `id` starting at `from`.
  std::vector<Best> best(text.size() + 1, Best{unk, 0, -std::numeric_limits<double>::infinity()});
  best[0].score = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t char_len = std::min(utf8_length((unsigned char)text[at]), text.size() - at);
    const double base = best[at].score;
    bool whole_char = false;
    const size_t longest = std::min(max_piece_bytes, text.size() - at);
    for (size_t len = 1; len <= longest; ++len) {
      const auto it = pieces.find(text.substr(at, len));
      if (it == pieces.end()) continue;
      if (len == char_len) whole_char = true;
      const double s = base + (user_defined[(size_t)it->second] ? 0.0 : scores[(size_t)it->second]);
      if (s > best[at + len].score) best[at + len] = Best{it->second, at, s};
    }
    if (!whole_char) {
      const double s = base + unk_score;
      if (s > best[at + char_len].score) best[at + char_len] = Best{unk, at, s};
    }
    at += char_len;
  }
  const size_t first = out.size();
  bool previous_unknown = false;
  for (size_t end = text.size(); end > 0;) {
    const Best& b = best[end];
    const bool unknown = b.id == unk;
    if (!(previous_unknown && unknown)) out.push_back(b.id);
    previous_unknown = unknown;
    end = b.from;
  }
  std::reverse(out.begin() + (long)first, out.end());
}

std::optional<std::string> base64_decode(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const int v = value(c);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += (char)((acc >> bits) & 0xFF);
    }
  }
  return out;
}

}  // namespace spore::nlp::detail
