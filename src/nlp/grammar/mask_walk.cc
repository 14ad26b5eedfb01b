// The token mask of a grammar state (NOTE [Grammars]): one forward scan of the flat trie, each
// node's state the transition of its parent's by the node's byte, a refused byte skipping the
// node's whole subtree. The states met are interned per mask computation and their transitions
// kept in tables, so most nodes cost one table lookup:
// - an ASCII byte (or a lead byte's viability) from a state: a [state][byte] table;
// - a multi-byte code point: the transition depends only on which of the state's distinct stack
//   tops accept it (its signature), so a state keeps signature -> state pairs and a code point
//   costs a few range checks instead of a parse-stack update. A UTF-8 sequence in progress is
//   carried beside the state (bits so far), not interned: a vocabulary of CJK tokens would
//   otherwise intern one state per distinct lead-byte prefix.
// GrammarLimits::max_walk_states bounds the tables; past it the mask is computed again without
// them (walk_plain), a copy of the parse state per trie level.
#include <algorithm>

#include "nlp/grammar/matcher.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

constexpr int32_t kDead = -1, kFull = -2, kUnknown = -3;

// A walk position: an interned parse-stack set and the UTF-8 sequence in progress after it.
struct Pos {
  int32_t sid = 0;
  uint32_t partial = 0, min = 0;
  uint8_t left = 0;
};

class Walker {
 public:
  Walker(const Grammar::Impl& g, size_t max_states) : g_(g), max_states_(max_states) {}

  // The id of a state between code points; kFull when the tables hold max_states already.
  int32_t intern(GrammarState&& s) {
    std::string key = s.key();
    if (auto it = ids_.find(key); it != ids_.end()) return it->second;
    if (states_.size() >= max_states_) return kFull;
    const int32_t id = (int32_t)states_.size();
    ids_.emplace(std::move(key), id);
    Info info;
    for (const ParseStack& st : s.stacks)
      if (!st.empty()) info.tops.push_back(st.back());
    std::sort(info.tops.begin(), info.tops.end());
    info.tops.erase(std::unique(info.tops.begin(), info.tops.end()), info.tops.end());
    states_.push_back(std::move(s));
    info_.push_back(std::move(info));
    table_.resize(states_.size() * 256, kUnknown);
    return id;
  }

  // `to`: `from` after `byte`; false when no stack takes it (or the tables are full: full()).
  bool step(const Pos& from, uint8_t byte, Pos& to) {
    if (from.left == 0 && byte < 0x80) {  // the common case: an ASCII byte between code points
      int32_t t = table_[(size_t)from.sid * 256 + byte];
      if (t == kUnknown) {
        t = next_of(from.sid, byte);
        if (t == kFull) return false;
        table_[(size_t)from.sid * 256 + byte] = t;
      }
      if (t < 0) return false;
      to = Pos{t, 0, 0, 0};
      return true;
    }
    to = from;
    const Utf8Step u = utf8_step(to.partial, to.left, to.min, byte);
    if (u.kind == Utf8Step::kInvalid) return false;
    if (u.kind == Utf8Step::kPrefix) {
      if (from.left > 0) return viable(from.sid, u.lo, u.hi);
      int32_t& t = table_[(size_t)from.sid * 256 + byte];  // a lead byte: 0 viable, kDead not
      if (t == kUnknown) t = viable(from.sid, u.lo, u.hi) ? 0 : kDead;
      return t == 0;
    }
    const int32_t t = next_of(from.sid, u.cp);
    if (t < 0) return false;
    to = Pos{t, 0, 0, 0};
    return true;
  }

  bool full() const { return full_; }

 private:
  struct Info {
    std::vector<int32_t> tops;                          // distinct top symbols of the stacks
    std::vector<std::pair<uint64_t, int32_t>> by_sig;   // which tops accept -> next state
  };

  bool viable(int32_t sid, uint32_t lo, uint32_t hi) const {
    for (int32_t top : info_[(size_t)sid].tops)
      if (g_.accepts_some(g_.symbols[(size_t)top], lo, hi)) return true;
    return false;
  }

  // The state after code point `cp`; kDead when no stack takes it, kFull when the tables are.
  int32_t next_of(int32_t sid, uint32_t cp) {
    const std::vector<int32_t>& tops = info_[(size_t)sid].tops;
    uint64_t sig = 0;
    const bool small = tops.size() <= 64;
    if (small) {
      for (size_t j = 0; j < tops.size(); ++j)
        if (g_.accepts(g_.symbols[(size_t)tops[j]], cp)) sig |= uint64_t{1} << j;
      if (sig == 0) return kDead;
      for (const auto& [k, v] : info_[(size_t)sid].by_sig)
        if (k == sig) return v;
    }
    GrammarState n = states_[(size_t)sid];
    if (!n.advance(g_, cp)) return kDead;
    const int32_t id = intern(std::move(n));  // may grow info_: index it again below
    if (id == kFull) {
      full_ = true;
      return kFull;
    }
    if (small) info_[(size_t)sid].by_sig.emplace_back(sig, id);
    return id;
  }

  const Grammar::Impl& g_;
  size_t max_states_;
  bool full_ = false;
  std::vector<GrammarState> states_;
  std::vector<Info> info_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<int32_t> table_;  // [state * 256 + byte]: kUnknown until first asked
};

void set_bits(const TokenTrie& trie, size_t node, std::vector<uint64_t>& mask) {
  for (int32_t id : trie.tokens(node)) mask[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> trie,
                               std::vector<int32_t> end_ids)
    : grammar_(std::move(grammar)), trie_(std::move(trie)), end_ids_(std::move(end_ids)),
      state_(GrammarState::start(grammar_->impl())) {}

bool GrammarMatcher::walk(std::vector<uint64_t>& mask) const {
  const TokenTrie& t = *trie_;
  Walker w(grammar_->impl(), grammar_->impl().limits.max_walk_states);
  GrammarState base = state_;  // the stacks; a sequence in progress rides in the position
  base.partial = base.partial_min = 0;
  base.partial_left = 0;
  std::vector<Pos> at(t.max_depth() + 1);
  at[0] = Pos{w.intern(std::move(base)), state_.partial, state_.partial_min, state_.partial_left};
  if (at[0].sid < 0) return false;
  for (size_t i = 0, n = t.size(); i < n;) {
    const uint32_t d = t.depth(i);
    if (!w.step(at[d - 1], t.byte(i), at[d])) {
      if (w.full()) return false;
      i = t.skip(i);  // no token below this node can match
      continue;
    }
    set_bits(t, i, mask);
    ++i;
  }
  return true;
}

void GrammarMatcher::walk_plain(std::vector<uint64_t>& mask) const {
  const TokenTrie& t = *trie_;
  std::vector<GrammarState> at(t.max_depth() + 1);
  at[0] = state_;
  for (size_t i = 0, n = t.size(); i < n;) {
    const uint32_t d = t.depth(i);
    at[d] = at[d - 1];
    if (!at[d].feed(grammar_->impl(), t.byte(i))) {
      i = t.skip(i);
      continue;
    }
    set_bits(t, i, mask);
    ++i;
  }
}

const std::vector<uint64_t>& GrammarMatcher::allowed() {
  if (current_) return *current_;
  const std::string key = state_.key();
  if (auto it = cache_.find(key); it != cache_.end()) {
    current_ = it->second;
    return *current_;
  }
  auto mask = std::make_shared<std::vector<uint64_t>>(((size_t)trie_->vocab() + 63) / 64, 0);
  if (!walk(*mask)) {
    std::fill(mask->begin(), mask->end(), 0);
    walk_plain(*mask);
  }
  if (state_.accepting())
    for (int32_t id : end_ids_)
      if (id >= 0 && id < trie_->vocab()) (*mask)[(size_t)id >> 6] |= uint64_t{1} << (id & 63);
  if (cache_.size() >= 1024) cache_.clear();  // a bound on memory: ~19 kB a mask at 150k tokens
  cache_.emplace(key, mask);
  current_ = mask;
  return *current_;
}

bool GrammarMatcher::allows(int32_t token) const {
  if (current_) return token >= 0 && token < trie_->vocab() && test(*current_, token);
  if (state_.accepting() && std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end()) return true;
  const std::string* bytes = trie_->bytes_of(token);
  if (!bytes) return false;
  GrammarState next = state_;
  return next.feed(grammar_->impl(), *bytes);
}

void GrammarMatcher::accept(int32_t token) {
  if (std::find(end_ids_.begin(), end_ids_.end(), token) != end_ids_.end() && state_.accepting()) return;
  const std::string* bytes = trie_->bytes_of(token);
  GrammarState next = state_;
  if (!bytes || !next.feed(grammar_->impl(), *bytes))
    throw Error(ErrorCode::kValue, "grammar: token " + std::to_string(token) + " does not continue the grammar here");
  state_ = std::move(next);
  current_.reset();
}

}  // namespace spore::nlp::detail
