// The CLI's rules for a person at the keyboard (NOTE [A command line that helps]): every
// subcommand carries an example line in its --help, a usage error names the unknown word and
// offers the closest valid one, and --version says which build this is.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace spore::cli {

// Adds subcommand `name` to `parent` with its one-line description and an example command line
// shown at the end of its --help. Every subcommand is added through here.
CLI::App* add_command(CLI::App& parent, const std::string& name, const std::string& description,
                      const std::string& example);

// The candidate closest to `word` by edit distance when it is close enough to be a likely typo
// (or `word` is a prefix of it); empty otherwise.
std::string closest_word(const std::string& word, const std::vector<std::string>& candidates);

// Explains a parse error by walking argv against the command tree: an unknown subcommand or
// option is named, with "did you mean" and the valid choices. Falls back to CLI11's own message
// when the walk finds nothing wrong. Returns the exit status (2).
int explain_usage_error(CLI::App& app, const CLI::ParseError& e, int argc, char** argv);

// "spore 0.1.0 (commit abc123, Release build)"
std::string version_text();

}  // namespace spore::cli
