// spore._spore.nlp: the LLM engine and its LoRA training for spore.nlp (NOTE [Python NLP] in
// docs/design.md). Bound in the framework's module, not a module of its own: the training path
// hands out Parameters and Tensors, whose Python classes are local to spore._spore.
#pragma once
#include <pybind11/pybind11.h>

#include <memory>

#include "spore/nlp/model.h"

namespace spore::py_bind {

// Adds the submodule `nlp` to `m`: the bindings where spore_finetune is built
// (nlp_module.cc), else a stub whose `missing` names what the build lacked (nlp_missing.cc).
void bind_nlp(pybind11::module_& m);

// The pieces of nlp_module.cc, one file each.
void bind_nlp_text(pybind11::module_& nlp);   // tokenizer_bindings.cc: Tokenizer, StreamDecoder, ChatTemplate
void bind_nlp_model(pybind11::module_& nlp);  // model_bindings.cc: LoadedModel, Engine, LoraAdapter
void bind_nlp_lora(pybind11::module_& nlp);   // lora_bindings.cc: LoraModel (training)

// A loaded model as Python holds it: shared by the engines and adapters made from it, which
// point at its CausalLM.
struct PyLoadedModel {
  std::shared_ptr<const nlp::LoadedModel> model;
};

}  // namespace spore::py_bind
