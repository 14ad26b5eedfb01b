// spore._spore.nlp where this build has no LLM engine (PCRE2 / utf8proc not found, so neither
// spore_nlp nor spore_finetune was built): spore.nlp raises naming what to install.
#include "nlp/nlp_bindings.h"

namespace spore::py_bind {

void bind_nlp(pybind11::module_& m) {
  pybind11::module_ nlp = m.def_submodule("nlp", "Not built: this build has no LLM engine");
  nlp.attr("missing") =
      "this build of spore has no LLM engine (spore_nlp needs PCRE2 and utf8proc: install libpcre2-dev and "
      "libutf8proc-dev, or run scripts/install-deps.sh, then rebuild)";
}

}  // namespace spore::py_bind
