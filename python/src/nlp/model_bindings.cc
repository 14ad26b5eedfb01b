// LoadedModel, Engine and LoraAdapter for spore.nlp.AutoModelForCausalLM (NOTE [Python NLP]):
// loading and the engine's generation loop as the C++ CLI runs them; spore/nlp/modeling.py and
// generation.py give them transformers' spelling. Engine.step releases the GIL, so a streamer
// consumed on another Python thread (TextIteratorStreamer) runs while the model computes.
#include <pybind11/stl.h>

#include <filesystem>
#include <set>

#include "nlp/nlp_bindings.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/generate.h"
#include "spore/nlp/lora.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace spore::py_bind {
namespace {

using AdapterList = std::vector<std::pair<std::shared_ptr<nlp::LoraAdapter>, double>>;

std::vector<nlp::LoraUse> uses_of(const AdapterList& adapters) {
  std::vector<nlp::LoraUse> out;
  for (const auto& [a, scale] : adapters) out.push_back({a, scale});
  return out;
}

py::dict config_dict(const nlp::ModelConfig& c) {
  py::dict d;
  d["family"] = c.family;
  d["architecture"] = c.architecture;
  d["vocab_size"] = c.vocab_size;
  d["hidden_size"] = c.hidden_size;
  d["intermediate_size"] = c.intermediate_size;
  d["num_hidden_layers"] = c.num_layers;
  d["num_attention_heads"] = c.num_heads;
  d["num_key_value_heads"] = c.num_kv_heads;
  d["head_dim"] = c.head_dim;
  d["max_position_embeddings"] = c.max_position_embeddings;
  d["rms_norm_eps"] = c.rms_norm_eps;
  d["rope_theta"] = c.rope_theta;
  d["tie_word_embeddings"] = c.tie_word_embeddings;
  d["bos_token_id"] = c.bos_id ? py::cast(*c.bos_id) : py::none();
  d["eos_token_id"] = c.eos_ids;
  for (const auto& [k, v] : c.extra) d[py::str(k)] = v;
  return d;
}

py::dict generation_dict(const nlp::GenerationDefaults& g) {
  py::dict d;
  if (g.temperature) d["temperature"] = *g.temperature;
  if (g.top_p) d["top_p"] = *g.top_p;
  if (g.min_p) d["min_p"] = *g.min_p;
  if (g.repetition_penalty) d["repetition_penalty"] = *g.repetition_penalty;
  if (g.top_k) d["top_k"] = *g.top_k;
  return d;
}

// Elements of every weight the artifact stores (PEFT's "all params" counts the base's).
uint64_t stored_parameters(const nlp::LoadedModel& m) {
  std::vector<fs::path> files;
  std::error_code ec;
  if (fs::is_directory(m.path, ec)) {
    for (const auto& e : fs::directory_iterator(m.path, ec))
      if (e.path().extension() == (m.format == "gguf" ? ".gguf" : ".safetensors")) files.push_back(e.path());
  } else {
    files.push_back(m.path);
  }
  uint64_t n = 0;
  for (const fs::path& f : files) {
    if (f.extension() == ".gguf") {
      const GgufFile g(f);  // a named file: tensors() refers into it
      for (const GgufTensorInfo& t : g.tensors()) n += t.numel();
    } else {
      const SafeTensorsFile st(f);
      for (const SafeTensorInfo& t : st.tensors()) n += static_cast<uint64_t>(t.shape.numel());
    }
  }
  return n;
}

// GenerateOptions from the keyword arguments spore/nlp/generation.py passes (engine names); an
// unknown key is a programming error there, so it is kInternal naming it.
nlp::GenerateOptions options_of(const py::dict& kw, const AdapterList& adapters) {
  nlp::GenerateOptions o;
  for (auto [k, v] : kw) {
    const std::string key = py::str(k);
    if (v.is_none()) continue;
    nlp::SamplingOptions& s = o.sampling;
    if (key == "temperature") s.temperature = v.cast<double>();
    else if (key == "top_k") s.top_k = v.cast<int64_t>();
    else if (key == "top_p") s.top_p = v.cast<double>();
    else if (key == "min_p") s.min_p = v.cast<double>();
    else if (key == "repetition_penalty") s.repetition_penalty = v.cast<double>();
    else if (key == "presence_penalty") s.presence_penalty = v.cast<double>();
    else if (key == "frequency_penalty") s.frequency_penalty = v.cast<double>();
    else if (key == "penalty_last_n") s.penalty_last_n = v.cast<int64_t>();
    else if (key == "seed") s.seed = v.cast<uint64_t>();
    else if (key == "max_tokens") o.max_tokens = v.cast<int64_t>();
    else if (key == "stop") o.stop = v.cast<std::vector<std::string>>();
    else if (key == "eos_ids") o.eos_ids = v.cast<std::vector<int32_t>>();
    else if (key == "ignore_eos") o.ignore_eos = v.cast<bool>();
    else if (key == "apply_model_defaults") o.apply_model_defaults = v.cast<bool>();
    else throw Error(ErrorCode::kInternal, "spore.nlp: unknown generation option '" + key + "'");
  }
  o.lora = uses_of(adapters);
  return o;
}

const char* finish_name(nlp::FinishReason r) {
  return r == nlp::FinishReason::kNone ? nullptr : nlp::finish_reason_name(r);
}

struct PyEngine {
  std::shared_ptr<const nlp::LoadedModel> model;  // outlives the engine, which holds a reference
  std::unique_ptr<nlp::Engine> engine;
};

}  // namespace

void bind_nlp_model(py::module_& nlp) {
  py::class_<nlp::LoraAdapter, std::shared_ptr<nlp::LoraAdapter>>(nlp, "LoraAdapter", py::module_local())
      .def_property_readonly("path", [](const nlp::LoraAdapter& a) { return a.path.string(); })
      .def_readonly("format", &nlp::LoraAdapter::format)
      .def_readonly("alpha", &nlp::LoraAdapter::alpha)
      .def_readonly("max_rank", &nlp::LoraAdapter::max_rank)
      .def_readonly("pairs", &nlp::LoraAdapter::pairs);

  py::class_<PyLoadedModel>(nlp, "LoadedModel", py::module_local())
      .def_static("load",
                  [](const std::string& path, bool allow_unverified, const std::string& numerics) {
                    nlp::LoadOptions o;
                    o.allow_unverified = allow_unverified;
                    o.numerics = nlp::parse_numerics(numerics);
                    py::gil_scoped_release nogil;
                    return PyLoadedModel{std::make_shared<const nlp::LoadedModel>(nlp::load_model(path, o))};
                  },
                  py::arg("path"), py::arg("allow_unverified") = false, py::arg("numerics") = "auto")
      .def_property_readonly("path", [](const PyLoadedModel& m) { return m.model->path.string(); })
      .def_property_readonly("format", [](const PyLoadedModel& m) { return m.model->format; })
      .def_property_readonly("numerics", [](const PyLoadedModel& m) { return m.model->numerics; })
      .def_property_readonly("config", [](const PyLoadedModel& m) { return config_dict(m.model->lm->config()); })
      .def_property_readonly("generation_defaults", [](const PyLoadedModel& m) { return generation_dict(m.model->generation); })
      .def_property_readonly("tokenizer", [](const PyLoadedModel& m) { return m.model->tokenizer; })
      .def_property_readonly("chat_template", [](const PyLoadedModel& m) { return m.model->chat_template; })
      .def("num_parameters", [](const PyLoadedModel& m) { return stored_parameters(*m.model); })
      // Float32 logits [len(ids), vocab] of one sequence through the engine's forward pass
      // (float32 KV cache), with `adapters` applied: inference, outside any tape.
      .def("logits",
           [](const PyLoadedModel& m, const std::vector<int32_t>& ids, const AdapterList& adapters) {
             if (ids.empty()) throw Error(ErrorCode::kValue, "spore.nlp: a forward pass needs at least one token");
             const std::vector<nlp::LoraUse> uses = uses_of(adapters);
             py::gil_scoped_release nogil;
             auto cache = m.model->lm->make_cache(1, static_cast<int64_t>(ids.size()), DType::kFloat32);
             nlp::SequenceChunk c;
             c.tokens = ids;
             c.all_logits = true;
             c.lora = uses;
             return m.model->lm->forward({&c, 1}, *cache);
           },
           py::arg("ids"), py::arg("adapters") = AdapterList{})
      // An adapter file or PEFT directory for this model (the CLI's --lora).
      .def("load_lora",
           [](const PyLoadedModel& m, const std::string& path) {
             return std::const_pointer_cast<nlp::LoraAdapter>(nlp::load_lora(path, *m.model));
           });

  py::class_<PyEngine>(nlp, "Engine", py::module_local())
      .def(py::init([](const PyLoadedModel& m, int64_t slots, int64_t context) {
             nlp::EngineOptions o;
             o.slots = slots;
             o.context = context;
             o.prefix_cache = false;  // one generate call, fresh sequences
             PyEngine e{m.model, nullptr};
             py::gil_scoped_release nogil;
             e.engine = std::make_unique<nlp::Engine>(*e.model, o);
             return e;
           }),
           py::arg("model"), py::arg("slots"), py::arg("context"))
      .def("add",
           [](PyEngine& e, std::vector<int32_t> prompt, const py::dict& options, const AdapterList& adapters) {
             return e.engine->add(std::move(prompt), options_of(options, adapters));
           },
           py::arg("prompt"), py::arg("options"), py::arg("adapters") = AdapterList{})
      // One batched step: [(sequence, token or None, eos, text, finish or None, error)].
      .def("step",
           [](PyEngine& e) {
             std::vector<nlp::SequenceEvent> events;
             {
               py::gil_scoped_release nogil;
               events = e.engine->step();
             }
             py::list out;
             for (const nlp::SequenceEvent& ev : events) {
               py::object token = ev.token ? py::cast(*ev.token) : py::none();
               const char* fin = finish_name(ev.finished);
               py::object text = py::reinterpret_steal<py::str>(
                   PyUnicode_DecodeUTF8(ev.text.data(), (Py_ssize_t)ev.text.size(), "replace"));
               out.append(py::make_tuple(ev.sequence, token, ev.eos, text, fin ? py::cast(fin) : py::none(), ev.error));
             }
             return out;
           })
      .def("idle", [](const PyEngine& e) { return e.engine->idle(); })
      .def("cancel", [](PyEngine& e, uint64_t s) { e.engine->cancel(s); })
      .def("context", [](const PyEngine& e) { return e.engine->context(); });
}

}  // namespace spore::py_bind
