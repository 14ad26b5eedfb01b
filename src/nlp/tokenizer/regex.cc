#define PCRE2_CODE_UNIT_WIDTH 8
#include "nlp/tokenizer/regex.h"

#include <pcre2.h>

#include "spore/error.h"

namespace spore::nlp::detail {

namespace {
// One match-data block per thread (sized for the patterns' groups), reused across calls so a
// match costs no allocation.
struct MatchData {
  pcre2_match_data* md = nullptr;
  ~MatchData() {
    if (md) pcre2_match_data_free(md);
  }
};
pcre2_match_data* thread_match_data() {
  thread_local MatchData data;
  if (!data.md) data.md = pcre2_match_data_create(64, nullptr);
  return data.md;
}
}  // namespace

struct Regex::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Impl() {
    if (code) pcre2_code_free(code);
  }
};

Regex::Regex(std::string_view pattern, bool literal, const std::string& field)
    : impl_(std::make_unique<Impl>()), pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE err_offset = 0;
  // PCRE2_LITERAL admits only a few other options (UCP is not one; it means nothing there).
  const uint32_t flags = literal ? PCRE2_UTF | PCRE2_LITERAL : PCRE2_UTF | PCRE2_UCP;
  // The pattern itself comes from the file: check its UTF-8 here (PCRE2 would too, but without
  // naming the field).
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                              flags, &err, &err_offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error(ErrorCode::kFormat, field + ": PCRE2 rejects the pattern '" + std::string(pattern) +
                                        "' at offset " + std::to_string(err_offset) + ": " +
                                        reinterpret_cast<const char*>(msg));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

bool Regex::next_match(std::string_view text, size_t from, size_t& b, size_t& e) const {
  pcre2_match_data* md = thread_match_data();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data() ? text.data() : "");
  // The text was validated as UTF-8 before it got here, so PCRE2 need not check it again
  // (which would make every call linear in the remaining text).
  const int rc = impl_->jit
                     ? pcre2_jit_match(impl_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK,
                                       md, nullptr)
                     : pcre2_match(impl_->code, subject, text.size(), from, PCRE2_NO_UTF_CHECK, md,
                                   nullptr);
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  if (rc < 0 && rc != 0) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(rc, msg, sizeof msg);
    throw Error(ErrorCode::kValue, "regex '" + pattern_ + "' failed on a " +
                                       std::to_string(text.size()) + "-byte text: " +
                                       reinterpret_cast<const char*>(msg));
  }
  const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
  b = ov[0];
  e = ov[1];
  return true;
}

}  // namespace spore::nlp::detail
