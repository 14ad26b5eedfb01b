// Usage errors that name the mistake (NOTE [A command line that helps]).
#include "usage.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "spore/probe.h"

namespace spore::cli {

CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description,
                      const std::string& example) {
  CLI::App* c = parent.add_subcommand(name, description);
  c->footer("Example: " + example);
  return c;
}

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) s += (s.empty() ? "" : ", ") + w;
  return s;
}

// "spore probe run": the command path of `app`, for messages.
std::string path_of(const CLI::App* app) {
  std::string p;
  for (; app != nullptr; app = app->get_parent()) p = app->get_name() + (p.empty() ? "" : " " + p);
  return p;
}

std::vector<std::string> subcommand_names(CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* s : app->get_subcommands({}))
    if (!s->get_name().empty()) names.push_back(s->get_name());
  return names;
}

std::vector<std::string> option_names(CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app->get_options({})) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  return names;
}

CLI::App* find_subcommand(CLI::App* app, const std::string& name) {
  for (CLI::App* s : app->get_subcommands({}))
    if (s->check_name(name)) return s;
  return nullptr;
}

bool has_positionals(CLI::App* app) {
  for (const CLI::Option* o : app->get_options({}))
    if (o->get_positional()) return true;
  return false;
}

int unknown(const CLI::App* at, const char* what, const std::string& word, const std::vector<std::string>& valid) {
  const std::string path = path_of(at);
  std::fprintf(stderr, "%s: unknown %s '%s'", path.c_str(), what, word.c_str());
  const std::string near = closest_word(word, valid);
  if (!near.empty()) std::fprintf(stderr, "; did you mean '%s'?", near.c_str());
  std::fprintf(stderr, "\n  valid %ss: %s\n  see `%s --help`\n", what, join(valid).c_str(), path.c_str());
  return 2;
}

}  // namespace

std::string closest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  // A typo is a few letters off; a prefix (`spore rep`) is an unfinished word.
  const size_t allowed = std::max<size_t>(2, word.size() / 3);
  if (best_d <= allowed) return best;
  const size_t letters = word.size() - std::min(word.find_first_not_of('-'), word.size());
  if (letters >= 2)
    for (const auto& c : candidates)
      if (c.rfind(word, 0) == 0) return c;
  return "";
}

int explain_usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  CLI::App* at = &app;
  for (int i = 1; i < argc; ++i) {
    const std::string tok = argv[i];
    if (tok == "--") break;
    if (tok.size() > 1 && tok[0] == '-') {
      const std::string name = tok.substr(0, tok.find('='));
      // Bundled short flags (-abc) and negative numbers are left to CLI11's own message.
      if ((name.size() > 2 && name[1] != '-') || std::isdigit((unsigned char)name[1])) continue;
      const CLI::Option* opt = at->get_option_no_throw(name);
      if (opt == nullptr) return unknown(at, "option", name, option_names(at));
      if (opt->get_expected_min() > 0 && name.size() == tok.size()) ++i;  // its value follows
      continue;
    }
    if (CLI::App* sub = find_subcommand(at, tok)) {
      at = sub;
      continue;
    }
    const std::vector<std::string> subs = subcommand_names(at);
    if (!subs.empty() && !has_positionals(at)) return unknown(at, "subcommand", tok, subs);
  }
  const std::vector<std::string> subs = subcommand_names(at);
  if (!subs.empty() && at->get_require_subcommand_min() > 0 && std::string(e.get_name()) == "RequiredError") {
    const std::string path = path_of(at);
    std::fprintf(stderr, "%s: a subcommand is required: %s\n  see `%s --help`\n", path.c_str(), join(subs).c_str(),
                 path.c_str());
    return 2;
  }
  app.exit(e);
  return 2;
}

std::string version_text() {
  return "spore " + probe::spore_version() + " (commit " + probe::spore_git_commit() + ", " + probe::spore_build_type() +
         " build)";
}

}  // namespace spore::cli
