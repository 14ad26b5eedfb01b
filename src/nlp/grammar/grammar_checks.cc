// The whole-grammar checks (NOTE [Grammars]): left recursion would make the matcher's expansion
// loop forever, and a root that derives no finite string would dead-end every sequence at once.
// Both are linear in the grammar's size (worklists, an iterative depth-first search), so a
// hostile grammar cannot make them slow or overflow the stack.
#include <string>
#include <vector>

#include "nlp/grammar/grammar_impl.h"
#include "spore/error.h"

namespace spore::nlp::detail {

namespace {

// The rules for which some alternative is made only of symbols that are `ok` (characters when
// `chars_ok`, else never) and references to rules already in the set: with chars_ok false that
// is "derives the empty string", with true "derives some finite string".
std::vector<bool> closure(const Grammar::Impl& g, bool chars_ok) {
  const size_t rules = g.alternatives.size();
  std::vector<int32_t> alt_rule, need;
  std::vector<std::vector<int32_t>> uses(rules);  // rule -> alternatives referring to it (once per reference)
  std::vector<int32_t> ready;
  for (size_t r = 0; r < rules; ++r)
    for (int32_t start : g.alternatives[r]) {
      const int32_t a = (int32_t)alt_rule.size();
      alt_rule.push_back((int32_t)r);
      int32_t n = 0;
      bool dead = false;
      for (int32_t i = start; g.symbols[(size_t)i].kind != Symbol::kEnd; ++i) {
        const Symbol& s = g.symbols[(size_t)i];
        if (s.kind == Symbol::kRef) {
          ++n;
          uses[(size_t)s.a].push_back(a);
        } else if (!chars_ok || (s.kind == Symbol::kChar && s.a == s.b)) {
          dead = true;  // a character (or an empty class, which matches nothing)
        }
      }
      need.push_back(dead ? -1 : n);
      if (n == 0 && !dead) ready.push_back(a);
    }
  std::vector<bool> yes(rules, false);
  while (!ready.empty()) {
    const int32_t r = alt_rule[(size_t)ready.back()];
    ready.pop_back();
    if (yes[(size_t)r]) continue;
    yes[(size_t)r] = true;
    for (int32_t a : uses[(size_t)r])
      if (need[(size_t)a] > 0 && --need[(size_t)a] == 0) ready.push_back(a);
  }
  return yes;
}

}  // namespace

void check_grammar(const Grammar::Impl& g) {
  const size_t rules = g.alternatives.size();
  const std::vector<bool> nullable = closure(g, false);
  // Edges r -> s where s can be the first thing r derives (after nullable references).
  std::vector<std::vector<int32_t>> first(rules);
  for (size_t r = 0; r < rules; ++r)
    for (int32_t start : g.alternatives[r])
      for (int32_t i = start;; ++i) {
        const Symbol& s = g.symbols[(size_t)i];
        if (s.kind != Symbol::kRef) break;
        first[r].push_back(s.a);
        if (!nullable[(size_t)s.a]) break;
      }
  // Iterative DFS: a back edge is a left-recursive cycle; the path names it.
  std::vector<uint8_t> color(rules, 0);  // 0 new, 1 on the path, 2 done
  for (size_t start = 0; start < rules; ++start) {
    if (color[start]) continue;
    std::vector<std::pair<int32_t, size_t>> path{{(int32_t)start, 0}};
    color[start] = 1;
    while (!path.empty()) {
      auto& [r, next] = path.back();
      if (next < first[(size_t)r].size()) {
        const int32_t s = first[(size_t)r][next++];
        if (color[(size_t)s] == 1) {
          std::string cycle;
          bool on = false;
          for (const auto& step : path) {
            if (step.first == s) on = true;
            if (on) cycle += g.names[(size_t)step.first] + " -> ";
          }
          cycle += g.names[(size_t)s];
          throw Error(ErrorCode::kValue, "grammar: the rule '" + g.names[(size_t)s] + "' is left-recursive (" + cycle +
                                             "); rewrite it with repetition, e.g. `list ::= item (\",\" item)*` instead "
                                             "of `list ::= list \",\" item | item`");
        }
        if (color[(size_t)s] == 0) {
          color[(size_t)s] = 1;
          path.emplace_back(s, 0);
        }
      } else {
        color[(size_t)r] = 2;
        path.pop_back();
      }
    }
  }
  if (!closure(g, true)[(size_t)g.root])
    throw Error(ErrorCode::kValue, "grammar: the rule '" + g.names[(size_t)g.root] +
                                       "' derives no finite string (every alternative recurses forever or uses an "
                                       "empty class), so nothing could be generated; give it a way to end");
}

}  // namespace spore::nlp::detail
