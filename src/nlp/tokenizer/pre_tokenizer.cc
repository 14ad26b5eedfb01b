// Pre-tokenizers: Split (regex, five behaviours), ByteLevel, Metaspace, Digits. Each step cuts
// its piece and hands the parts to the next step; the last step's parts are the words.
#include <utf8proc.h>

#include "nlp/tokenizer/pipeline.h"
#include "nlp/tokenizer/utf8.h"

namespace spore::nlp::detail {

namespace {

struct Segment {
  size_t begin, end;
  bool match;
};

// Hugging Face's SplitDelimiterBehavior over (segment, is_match) pairs that tile the text.
std::vector<Segment> apply_behavior(std::vector<Segment> segs, SplitBehavior behavior) {
  std::vector<Segment> out;
  out.reserve(segs.size());
  switch (behavior) {
    case SplitBehavior::kIsolated:
      return segs;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segs)
        if (!s.match) out.push_back(s);
      return out;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match && !previous_match && !out.empty())
          out.back().end = s.end;
        else
          out.push_back(s);
        previous_match = s.match;
      }
      return out;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (size_t k = segs.size(); k-- > 0;) {
        const Segment& s = segs[k];
        if (s.match && !previous_match && !out.empty())
          out.back().begin = s.begin;
        else
          out.push_back(s);
        previous_match = s.match;
      }
      return std::vector<Segment>(out.rbegin(), out.rend());
    }
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Segment& s : segs) {
        if (s.match == previous_match && !out.empty())
          out.back().end = s.end;
        else
          out.push_back(s);
        previous_match = s.match;
      }
      return out;
    }
  }
  return segs;
}

std::vector<Segment> regex_segments(const Regex& re, std::string_view text, bool invert) {
  std::vector<Segment> segs;
  size_t prev = 0;
  re.for_each_match(text, [&](size_t b, size_t e) {
    if (prev != b) segs.push_back({prev, b, invert});
    segs.push_back({b, e, !invert});
    prev = e;
  });
  if (prev != text.size()) segs.push_back({prev, text.size(), invert});
  return segs;
}

bool is_numeric(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const auto cat = utf8proc_category((utf8proc_int32_t)cp);
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

void run(const std::vector<PreStep>& steps, size_t k, std::string_view piece, bool first,
         const std::function<void(std::string_view)>& emit);

void emit_segments(const std::vector<PreStep>& steps, size_t k, std::string_view piece, bool first,
                   const std::vector<Segment>& segs,
                   const std::function<void(std::string_view)>& emit) {
  for (const Segment& s : segs)
    if (s.end > s.begin)
      run(steps, k + 1, piece.substr(s.begin, s.end - s.begin), first && s.begin == 0, emit);
}

void run(const std::vector<PreStep>& steps, size_t k, std::string_view piece, bool first,
         const std::function<void(std::string_view)>& emit) {
  if (piece.empty()) return;
  if (k == steps.size()) {
    emit(piece);
    return;
  }
  const PreStep& step = steps[k];
  if (auto* split = std::get_if<PreSplit>(&step)) {
    if (split->behavior == SplitBehavior::kIsolated && !split->invert) {
      // The common case (Qwen, Llama 3): every match and every gap is a word; no allocation.
      size_t prev = 0;
      split->pattern.for_each_match(piece, [&](size_t b, size_t e) {
        if (prev != b) run(steps, k + 1, piece.substr(prev, b - prev), first && prev == 0, emit);
        if (e > b) run(steps, k + 1, piece.substr(b, e - b), first && b == 0, emit);
        prev = e;
      });
      if (prev != piece.size()) run(steps, k + 1, piece.substr(prev), first && prev == 0, emit);
      return;
    }
    emit_segments(steps, k, piece, first,
                  apply_behavior(regex_segments(split->pattern, piece, split->invert),
                                 split->behavior),
                  emit);
  } else if (auto* bl = std::get_if<PreByteLevel>(&step)) {
    std::string owned;
    if (bl->add_prefix_space && piece.front() != ' ') {
      owned.reserve(piece.size() + 1);  // appended, not " " + string: GCC 12 -O1 warns (-Wrestrict, false)
      owned += ' ';
      owned += piece;
      piece = owned;
    }
    if (bl->regex)
      emit_segments(steps, k, piece, first, regex_segments(*bl->regex, piece, false), emit);
    else
      run(steps, k + 1, piece, first, emit);
  } else if (auto* ms = std::get_if<PreMetaspace>(&step)) {
    std::string text;
    text.reserve(piece.size() + 3);
    for (char c : piece) {
      if (c == ' ')
        text += ms->replacement;
      else
        text += c;
    }
    const bool starts = text.compare(0, ms->replacement.size(), ms->replacement) == 0;
    if (!starts && (ms->scheme == PrependScheme::kAlways ||
                    (ms->scheme == PrependScheme::kFirst && first)))
      text.insert(0, ms->replacement);
    if (!ms->split) {
      run(steps, k + 1, text, first, emit);
      return;
    }
    // Split on the replacement, each delimiter merged with the word after it.
    std::vector<Segment> segs;
    size_t prev = 0, pos = 0;
    while ((pos = text.find(ms->replacement, pos)) != std::string::npos) {
      if (prev != pos) segs.push_back({prev, pos, false});
      segs.push_back({pos, pos + ms->replacement.size(), true});
      pos += ms->replacement.size();
      prev = pos;
    }
    if (prev != text.size()) segs.push_back({prev, text.size(), false});
    emit_segments(steps, k, text, first, apply_behavior(segs, SplitBehavior::kMergedWithNext),
                  emit);
  } else if (auto* dg = std::get_if<PreDigits>(&step)) {
    std::vector<Segment> segs;
    size_t i = 0;
    while (i < piece.size()) {
      const size_t b = i;
      const bool num = is_numeric(next_code_point(piece, i));
      segs.push_back({b, i, num});
    }
    // Isolated digits one by one, or runs of digits together (Contiguous): both keep the rest.
    if (dg->individual) {
      std::vector<Segment> merged;
      for (const Segment& s : segs) {
        if (!s.match && !merged.empty() && !merged.back().match)
          merged.back().end = s.end;
        else
          merged.push_back(s);
      }
      emit_segments(steps, k, piece, first, merged, emit);
    } else {
      emit_segments(steps, k, piece, first, apply_behavior(segs, SplitBehavior::kContiguous), emit);
    }
  }
}

}  // namespace

void pre_tokenize(const std::vector<PreStep>& steps, std::string_view segment, bool first,
                  const std::function<void(std::string_view)>& emit) {
  run(steps, 0, segment, first, emit);
}

}  // namespace spore::nlp::detail
