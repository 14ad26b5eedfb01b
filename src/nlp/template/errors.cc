#include "nlp/template/errors.h"

namespace spore::nlp::tmpl {

void syntax_error(int line, int col, const std::string& what) {
  throw Error(ErrorCode::kFormat, "chat template syntax error at line " + std::to_string(line) +
                                      ", column " + std::to_string(col) + ": " + what);
}

void unsupported(int line, const std::string& construct) {
  throw Error(ErrorCode::kUnsupported,
              "chat template line " + std::to_string(line) + " uses " + construct +
                  ", which Spore's template engine does not support (NOTE [Chat templates] lists "
                  "the supported subset); render this template with transformers instead");
}

void render_error(int line, const std::string& what) {
  throw Error(ErrorCode::kValue, "chat template line " + std::to_string(line) + ": " + what);
}

}  // namespace spore::nlp::tmpl
