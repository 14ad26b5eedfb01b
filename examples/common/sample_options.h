// Options of one sample program (`05_autograd_train --steps 200 --lr 0.05`). The sample runs in a
// child process of its program (the harness's isolation), so sample_main hands every option it
// does not know to the child as an environment variable SPORE_SAMPLE_<NAME> (upper case), and
// the sample reads it here. Run through `spore samples run-all`, a sample gets its defaults.
#pragma once
#include <cctype>
#include <cstdlib>
#include <string>

#include "spore/error.h"

namespace spore::examples {

inline std::string sample_option_variable(std::string name) {
  std::string v = "SPORE_SAMPLE_";
  for (char c : name) v += c == '-' ? '_' : (char)std::toupper((unsigned char)c);
  return v;
}

// The option as a number, or `fallback` when it was not given; a value that is not a number is a
// kValue error naming the option.
inline double sample_option(const std::string& name, double fallback) {
  const char* s = std::getenv(sample_option_variable(name).c_str());
  if (!s) return fallback;
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || *end != '\0')
    throw Error(ErrorCode::kValue, "option --" + name + " needs a number, got '" + std::string(s) + "'");
  return v;
}

}  // namespace spore::examples
