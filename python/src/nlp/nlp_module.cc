// spore._spore.nlp (NOTE [Python NLP]).
#include "nlp/nlp_bindings.h"

namespace spore::py_bind {

void bind_nlp(pybind11::module_& m) {
  pybind11::module_ nlp = m.def_submodule("nlp", "The LLM engine and LoRA training (spore.nlp wraps it)");
  nlp.attr("missing") = pybind11::none();
  bind_nlp_text(nlp);
  bind_nlp_model(nlp);
  bind_nlp_lora(nlp);
}

}  // namespace spore::py_bind
