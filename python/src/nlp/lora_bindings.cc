// LoraModel for spore.nlp.peft (NOTE [Python NLP]): the C++ training path (spore_finetune, NOTE
// [LoRA training]) with its adapters as Python Parameters, so `value_and_grad` differentiates
// nll_sum with respect to them and the framework's optimizers update them in place, and its
// PEFT writer for save_pretrained. Nothing of the training forward is re-implemented here.
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "nlp/nlp_bindings.h"
#include "spore/bindings.h"
#include "spore/error.h"
#include "spore/nlp/finetune.h"
#include "spore/nlp/lora.h"
#include "spore/nlp/lora_merge.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace spore::py_bind {
namespace {

struct PyLoraModel {
  std::shared_ptr<nlp::LoraModel> model;
};

nlp::TrainExample example_of(std::vector<int32_t> ids, const std::vector<int>& target) {
  if (target.size() != ids.size())
    throw Error(ErrorCode::kShape, "spore.nlp: " + std::to_string(target.size()) + " label flags for " +
                                       std::to_string(ids.size()) + " tokens");
  nlp::TrainExample ex;
  ex.ids = std::move(ids);
  for (int t : target) ex.target.push_back(t ? 1 : 0);
  return ex;
}

// The adapters' current values as an engine adapter for `base`: written by the PEFT writer into
// a private temporary directory and read back by the engine's loader (load_lora), so generation
// applies exactly what save_pretrained would write (GGUF bases' q/k row order included).
std::shared_ptr<nlp::LoraAdapter> engine_adapter(const nlp::LoraModel& m, const PyLoadedModel& base) {
  static std::atomic<uint64_t> counter{0};
  const fs::path dir = fs::temp_directory_path() /
                       ("spore-py-lora-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  struct Cleanup {
    fs::path p;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(p, ec);
    }
  } cleanup{dir};
  nlp::write_peft_adapter(m, dir, base.model->path.string());
  return std::const_pointer_cast<nlp::LoraAdapter>(nlp::load_lora(dir, *base.model));
}

// The engine's projection for a training target ("q_proj" -> kQ).
nlp::LoraProjection projection_of(const std::string& target) {
  for (size_t i = 0; i < static_cast<size_t>(nlp::LoraProjection::kCount); ++i) {
    const auto p = static_cast<nlp::LoraProjection>(i);
    if (target == std::string(nlp::lora_projection_name(p)) + "_proj") return p;
  }
  throw Error(ErrorCode::kInternal, "spore.nlp: no engine projection for " + target);
}

// What a loaded adapter trains: its targets, its rank and its alpha (from the pairs' scale, so a
// GGUF adapter without adapter.lora.alpha reads as llama.cpp applies it). kUnsupported for what
// the training model cannot continue: fused projections, ranks that differ between projections,
// per-projection scales (PEFT's rank_pattern / alpha_pattern, rsLoRA's alpha / sqrt(r)).
py::tuple adapter_layout(const nlp::LoraAdapter& a) {
  std::vector<std::string> targets;
  int64_t rank = 0;
  double scale = 0;
  const std::string file = a.path.string();
  for (size_t l = 0; l < a.layers.size(); ++l)
    for (size_t i = 0; i < a.layers[l].size(); ++i) {
      const nlp::LoraPair& pair = a.layers[l][i];
      if (!pair.defined()) continue;
      const std::string name = nlp::lora_projection_name(static_cast<nlp::LoraProjection>(i));
      if (name == "qkv" || name == "gate_up")
        throw Error(ErrorCode::kUnsupported, file + ": layer " + std::to_string(l) + " adapts the fused " + name +
                                                 " projection, which LoRA training does not run");
      const int64_t r = pair.a.size(0);
      if ((rank != 0 && r != rank) || (scale != 0 && std::abs(pair.scale - scale) > 1e-9 * std::abs(scale)))
        throw Error(ErrorCode::kUnsupported, file + ": layer " + std::to_string(l) + " " + name +
                                                 "_proj has rank " + std::to_string(r) + " and scale " +
                                                 std::to_string(pair.scale) +
                                                 ", unlike the others; training continues adapters of one rank and alpha");
      rank = r;
      scale = pair.scale;
      if (std::find(targets.begin(), targets.end(), name + "_proj") == targets.end()) targets.push_back(name + "_proj");
    }
  if (targets.empty()) throw Error(ErrorCode::kFormat, file + ": the adapter updates no projection");
  return py::make_tuple(targets, rank, scale * static_cast<double>(rank));
}

// Copies a loaded adapter's A and B (in the base's row order, as the training model keeps them)
// into the training model's Parameters, in place: kShape naming the module when they differ,
// kValue when the adapter lacks one the model has.
void set_from_adapter(const nlp::LoraModel& m, const nlp::LoraAdapter& a) {
  for (const nlp::TrainableLora& t : m.adapters()) {
    const std::string module = nlp::LoraModel::peft_module(t.layer, t.target);
    const nlp::LoraPair* pair = static_cast<size_t>(t.layer) < a.layers.size() ? &a.at(t.layer, projection_of(t.target)) : nullptr;
    if (!pair || !pair->defined())
      throw Error(ErrorCode::kValue, a.path.string() + " has no " + module + " adapter; the model trains one");
    for (const auto& [param, value] : {std::pair{t.a, pair->a}, std::pair{t.b, pair->b}}) {
      if (param.value().shape() != value.shape())
        throw Error(ErrorCode::kShape, a.path.string() + ": " + param.name() + " is " + value.shape().str() +
                                           ", the model's is " + param.value().shape().str());
      param.value().copy_(value);
    }
  }
}

}  // namespace

void bind_nlp_lora(py::module_& nlp) {
  nlp.attr("LORA_TARGETS") = nlp::kLoraTargetNames;
  nlp.def("parse_lora_targets", &nlp::parse_lora_targets);
  // `spore merge` (NOTE [LoRA merge]) for PeftModel.merge_and_unload: adapters as (path, scale).
  nlp.def(
      "merge_lora",
      [](const std::string& base, const std::vector<std::pair<std::string, double>>& adapters, const std::string& out,
         const std::string& type) {
        std::vector<nlp::MergeAdapter> a;
        for (const auto& [path, scale] : adapters) a.push_back({path, scale});
        nlp::MergeOptions o;
        o.type = type;
        py::gil_scoped_release unlocked;
        return nlp::merge_lora(base, a, out, o).merged_tensors;
      },
      py::arg("base"), py::arg("adapters"), py::arg("out"), py::arg("type") = "same");

  py::class_<PyLoraModel>(nlp, "LoraModel", py::module_local())
      .def(py::init([](const std::string& path, int64_t rank, double alpha, double dropout,
                       std::vector<std::string> targets, uint64_t seed) {
             nlp::LoraConfig c;
             c.rank = rank;
             c.alpha = alpha;
             c.dropout = dropout;
             c.targets = std::move(targets);
             c.seed = seed;
             py::gil_scoped_release nogil;
             return PyLoraModel{std::shared_ptr<nlp::LoraModel>(nlp::LoraModel::load(path, c))};
           }),
           py::arg("path"), py::arg("rank"), py::arg("alpha"), py::arg("dropout"), py::arg("targets"), py::arg("seed"))
      // a0, b0, a1, b1, ...: the handles the model reads, so updates in place are seen by it.
      .def("parameters",
           [](const PyLoraModel& m) {
             py::list out;
             for (const Parameter& p : m.model->parameters()) out.append(PyParameter(p));
             return out;
           })
      .def("adapters",
           [](const PyLoraModel& m) {
             py::list out;
             for (const nlp::TrainableLora& a : m.model->adapters()) out.append(py::make_tuple(a.layer, a.target));
             return out;
           })
      .def_property_readonly("gguf_layout", [](const PyLoraModel& m) { return m.model->gguf_layout(); })
      // Sum of the flagged tokens' negative log-likelihoods (flag i: token i is predicted from
      // position i - 1), differentiable in parameters(); dropout_key 0 is without dropout.
      .def("nll_sum",
           [](const PyLoraModel& m, std::vector<int32_t> ids, const std::vector<int>& target, uint64_t key) {
             return m.model->nll_sum(example_of(std::move(ids), target), key);
           },
           py::arg("ids"), py::arg("target"), py::arg("dropout_key") = 0)
      .def("logits", [](const PyLoraModel& m, const std::vector<int32_t>& ids) {
        if (ids.empty()) throw Error(ErrorCode::kValue, "spore.nlp: a forward pass needs at least one token");
        return m.model->logits(ids);
      })
      .def("save_peft",
           [](const PyLoraModel& m, const std::string& dir, const std::string& base_name) {
             py::gil_scoped_release nogil;
             nlp::write_peft_adapter(*m.model, dir, base_name);
           })
      .def("save_gguf",
           [](const PyLoraModel& m, const std::string& path) {
             py::gil_scoped_release nogil;
             nlp::write_gguf_adapter(*m.model, path);
           })
      .def_static("adapter_layout", &adapter_layout)
      .def("set_from_adapter", [](const PyLoraModel& m, const nlp::LoraAdapter& a) { set_from_adapter(*m.model, a); })
      .def("engine_adapter", [](const PyLoraModel& m, const PyLoadedModel& base) {
        py::gil_scoped_release nogil;
        return engine_adapter(*m.model, base);
      });
}

}  // namespace spore::py_bind
