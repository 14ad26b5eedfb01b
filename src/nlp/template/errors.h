// How the template engine reports problems: every error names where in the template it is.
// Syntax errors are kFormat with line and column; constructs outside the supported subset are
// kUnsupported with the construct and line; errors while rendering (a template's own
// raise_exception, undefined values used, type errors, the step limit) are kValue with the line.
#pragma once
#include <string>

#include "spore/error.h"

namespace spore::nlp::tmpl {

[[noreturn]] void syntax_error(int line, int col, const std::string& what);
[[noreturn]] void unsupported(int line, const std::string& construct);
[[noreturn]] void render_error(int line, const std::string& what);

}  // namespace spore::nlp::tmpl
