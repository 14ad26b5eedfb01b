// The token mask's independent reference (NOTE [Grammars]): each token's bytes fed to a copy of
// the parse state, no trie and no tables. Shared by grammar_test.cc and grammar_mask_test.cc.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "nlp/grammar/matcher.h"
#include "spore/nlp/grammar.h"

namespace spore::nlp::test {

// The matcher's mask equals the brute force at `state` (the matcher's own state); `ends`: its end
// ids, allowed when the text is a sentence.
inline void expect_mask_is_brute_force(const Grammar& g, const detail::TokenTrie& trie, detail::GrammarMatcher& m,
                                       const detail::GrammarState& state, const std::vector<int32_t>& ends,
                                       const std::string& where) {
  const std::vector<uint64_t>& mask = m.allowed();
  int allowed = 0;
  for (int32_t id = 0; id < trie.vocab(); ++id) {
    bool want = false;
    if (const std::string* b = trie.bytes_of(id)) {
      detail::GrammarState s = state;
      want = s.feed(g.impl(), *b);
    } else if (std::find(ends.begin(), ends.end(), id) != ends.end()) {
      want = state.accepting();
    }
    allowed += want;
    ASSERT_EQ(detail::GrammarMatcher::test(mask, id), want) << where << ": token " << id;
  }
  EXPECT_GT(allowed, 0) << where;
}

}  // namespace spore::nlp::test
