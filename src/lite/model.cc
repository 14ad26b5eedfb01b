// Lite's Model: format check first, then targets, then the plan (NOTE [Lite runtime]).
#include <algorithm>
#include <cstring>
#include <fstream>

#include "lite/executor.h"
#include "spore/backend.h"
#include "spore/context.h"
#include "spore/error.h"
#include "spore/ir.h"
#include "spore/lite.h"
#include "spore/mindir.h"
#include "spore/onnx.h"
#include "spore/op_registry.h"

namespace spore::lite {

const char* model_type_name(ModelType t) {
  switch (t) {
    case ModelType::kAuto: return "auto";
    case ModelType::kSpore: return "spore";
    case ModelType::kMindIR: return "mindir";
    case ModelType::kONNX: return "onnx";
  }
  return "?";
}

std::pair<uint32_t, uint32_t> readable_ir_versions() { return {ir::kOldestVersion, ir::kNewestVersion}; }

std::string TensorInfo::str() const {
  std::string s = name + ": " + dtype_name(dtype) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + (symbols[i].empty() ? std::to_string(shape[i]) : symbols[i]);
  return s + "]" + (carried.empty() ? "" : " (" + carried + " in the file)");
}

struct Model::Impl {
  std::string label;
  std::vector<TensorInfo> inputs, outputs;
  std::string target;
  std::vector<std::string> skipped;
  int num_threads = 0;
  std::unique_ptr<Executor> executor;
  std::vector<std::vector<int64_t>> fixed;  // per input: extents after resize (-1: still free)
  Device device;
  // An ONNX graph with symbolic input extents or whose mapping needs the values of some inputs
  // (onnx::InputValueNeeded): mapped at predict from the real inputs, again when the inputs'
  // shapes or the values it read change (NOTE [ONNX dynamic shapes]).
  std::vector<uint8_t> onnx_bytes;
  bool map_at_predict = false;
  std::vector<std::string> values_read;
  std::string mapped_for;  // the shapes and values the executor was mapped for
  // The mappings of the signatures seen before the current one, most recent last: a model run
  // with alternating shapes is mapped once per signature (NOTE [ONNX dynamic shapes]).
  std::vector<std::pair<std::string, std::unique_ptr<Executor>>> other_signatures;
  // Outputs narrowed after each run to a length the run computes (NOTE [Ragged outputs]), for the
  // current executor and for each kept one.
  std::vector<ir::RaggedOutput> ragged;
  std::vector<std::vector<ir::RaggedOutput>> other_ragged;
};

namespace {

// The format by content: Spore IR's magic; an ONNX or MindIR protobuf otherwise (their first
// byte is a field tag, which cannot tell them apart reliably): the name's extension, else a MindIR
// ModelProto that names MindSpore or carries a mind_ir_version (NOTE [MindIR]).
ModelType detect(const std::filesystem::path& path, ModelType asked) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kIO, "cannot open model file " + path.string());
  char head[8] = {};
  f.read(head, 8);
  if (f.gcount() == 8 && std::memcmp(head, ir::kMagic, 8) == 0) return ModelType::kSpore;
  const std::string ext = path.extension().string();
  if (asked == ModelType::kONNX || asked == ModelType::kMindIR) return asked;  // named by the caller
  if (ext == ".onnx") return ModelType::kONNX;
  if (ext == ".mindir") return ModelType::kMindIR;
  f.clear();
  f.seekg(0);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  if (mindir::looks_like_mindir(bytes)) return ModelType::kMindIR;
  throw Error(ErrorCode::kFormat, path.string() + ": not a Spore IR or MindIR file, and the name does not say .onnx; "
                                                  "pass the ModelType explicitly");
}

TensorInfo info_of(const ir::Value& v, uint32_t id) {
  // The name built with append, not "%" + to_string(id): GCC 12 reports a false -Wrestrict on
  // that concatenation at -O3 (a known false positive of its string inlining).
  std::string name = v.name;
  if (name.empty()) name.append("%").append(std::to_string(id));
  TensorInfo t{std::move(name), v.dtype, {}, {}, {}};
  for (const ir::Dim& d : v.dims) {
    t.shape.push_back(d.symbolic() ? -1 : d.extent);
    t.symbols.push_back(d.symbol);
  }
  return t;
}

// The first target this build has with a device present; the skipped ones with the reason.
Device choose_target(const Context& ctx, const std::string& label, std::string& chosen, std::vector<std::string>& skipped) {
  if (ctx.targets.empty()) throw Error(ErrorCode::kValue, label + ": the context lists no targets; add \"cpu\"");
  for (const std::string& name : ctx.targets) {
    const int id = find_backend(name == "gpu" ? "cuda" : name);
    if (id < 0) {
      skipped.push_back(name + ": not built into this Spore");
      continue;
    }
    if (backend(id).device_count() == 0) {
      skipped.push_back(name + ": no device present");
      continue;
    }
    chosen = name;
    return Device{(uint8_t)id, 0};
  }
  std::string why;
  for (const auto& s : skipped) why += "\n  " + s;
  throw Error(ErrorCode::kDevice, label + ": none of the context's targets is available:" + why +
                                      "\nadd \"cpu\" to the context's targets");
}

// The model's outputs as the caller sees them: a ragged output's axis is dynamic, and the lengths
// after the model's own outputs are hidden (NOTE [Ragged outputs]).
std::vector<TensorInfo> visible_outputs(const ir::Graph& g, const std::vector<ir::RaggedOutput>& ragged) {
  std::vector<TensorInfo> out;
  for (size_t k = 0; k + ragged.size() < g.outputs.size(); ++k) out.push_back(info_of(g.values[g.outputs[k]], g.outputs[k]));
  for (const ir::RaggedOutput& r : ragged) {
    out[r.output].shape[(size_t)r.axis] = -1;
    out[r.output].symbols[(size_t)r.axis] = "length";
  }
  return out;
}

// Each ragged output narrowed to its length; the lengths dropped.
std::vector<Tensor> narrowed(std::vector<Tensor> results, const std::vector<ir::RaggedOutput>& ragged) {
  if (ragged.empty()) return results;
  for (const ir::RaggedOutput& r : ragged) {
    const int64_t length = results[r.length].to(Device::cpu()).item<int64_t>();
    results[r.output] = dispatch1(OpId::k_slice, {results[r.output]}, Attrs::of((int64_t)r.axis, int64_t{0}, length, int64_t{1})).contiguous();
  }
  results.resize(results.size() - ragged.size());
  return results;
}

}  // namespace

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::build_from_file(const std::filesystem::path& path, ModelType type, const Context& context) {
  const std::string label = path.string();
  const ModelType actual = detect(path, type);
  if (type != ModelType::kAuto && type != actual)
    throw Error(ErrorCode::kFormat, label + " is a " + model_type_name(actual) + " file, but ModelType " +
                                        model_type_name(type) + " was asked for; pass ModelType " +
                                        model_type_name(actual) + " (or auto)");
  // The format first: a version or corruption problem is reported before any target is touched.
  // An ONNX file is mapped onto registry ops into the same IR model (NOTE [ONNX]).
  auto impl = std::make_unique<Impl>();
  impl->label = label;
  impl->num_threads = context.num_threads;
  ir::Model m;
  if (actual == ModelType::kONNX) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error(ErrorCode::kIO, "cannot open model file " + label);
    // One read of the whole file: a byte-by-byte istreambuf_iterator copy was a sixth of the
    // start-up of a 14 MB MobileNetV2 (perf, bench/lite_bench.py's start-up row).
    f.seekg(0, std::ios::end);
    impl->onnx_bytes.resize((size_t)std::max<std::streamoff>(0, f.tellg()));
    f.seekg(0);
    f.read(reinterpret_cast<char*>(impl->onnx_bytes.data()), (std::streamsize)impl->onnx_bytes.size());
    if (!f) throw Error(ErrorCode::kIO, "cannot read model file " + label);
    try {
      m = onnx::read_onnx_bytes(impl->onnx_bytes, label);
      impl->onnx_bytes.clear();
    } catch (const onnx::InputValueNeeded&) {
      // Symbolic input extents, or values of inputs the mapping needs: mapped at predict from
      // the real inputs, once per signature (NOTE [ONNX dynamic shapes]).
      impl->map_at_predict = true;
    }
  } else if (actual == ModelType::kMindIR) {
    m = mindir::read_mindir(path);  // MindSpore's export mapped onto registry ops (NOTE [MindIR])
  } else {
    m = ir::read_model(path);
  }
  if (impl->map_at_predict) {
    std::vector<std::string> carried;
    auto [ins, outs] = onnx::onnx_signature(impl->onnx_bytes, label, &carried);
    for (size_t i = 0; i < ins.size(); ++i) impl->inputs.push_back(info_of(ins[i], (uint32_t)i));
    for (size_t i = 0; i < outs.size(); ++i) {
      impl->outputs.push_back(info_of(outs[i], (uint32_t)i));
      impl->outputs.back().carried = carried[i];
    }
    for (const TensorInfo& t : impl->inputs) impl->fixed.push_back(t.shape);
    impl->device = choose_target(context, label, impl->target, impl->skipped);
    return Model(std::move(impl));
  }
  for (uint32_t id : m.graph.inputs) impl->inputs.push_back(info_of(m.graph.values[id], id));
  impl->outputs = visible_outputs(m.graph, m.ragged);
  for (size_t k = 0; k < impl->outputs.size(); ++k)  // NOTE [ONNX carried types]
    for (const auto& [key, value] : m.metadata)
      if (key == onnx::carried_output_key(k)) impl->outputs[k].carried = value;
  impl->ragged = m.ragged;
  for (const TensorInfo& t : impl->inputs) impl->fixed.push_back(t.shape);
  const Device device = choose_target(context, label, impl->target, impl->skipped);
  impl->device = device;
  impl->executor = std::make_unique<Executor>(std::move(m.graph), device, label);
  Model model(std::move(impl));
  // Fully fixed signatures are planned now, so every op error surfaces here, not at predict.
  std::vector<Shape> shapes;
  bool all_fixed = true;
  for (const auto& f : model.impl_->fixed) {
    for (int64_t e : f) all_fixed = all_fixed && e >= 0;
    if (all_fixed) shapes.push_back(Shape(f));
  }
  if (all_fixed) {
    ContextSettings settings = spore::context();
    settings.device = device;
    settings.num_threads = context.num_threads;
    ContextScope scope(settings);
    model.impl_->executor->plan(shapes);
  }
  return model;
}

const std::vector<TensorInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return impl_->outputs; }
const std::string& Model::target() const { return impl_->target; }
const std::vector<std::string>& Model::skipped_targets() const { return impl_->skipped; }

void Model::resize(const std::map<std::string, std::vector<int64_t>>& shapes) {
  std::map<std::string, int64_t> bound;  // symbol -> extent, across inputs
  for (const auto& [name, shape] : shapes) {
    size_t i = 0;
    while (i < impl_->inputs.size() && impl_->inputs[i].name != name) ++i;
    if (i == impl_->inputs.size()) throw Error(ErrorCode::kValue, impl_->label + ": resize: the model has no input '" + name + "'");
    const TensorInfo& t = impl_->inputs[i];
    if (shape.size() != t.shape.size())
      throw Error(ErrorCode::kValue, impl_->label + ": resize: input " + t.str() + " has " + std::to_string(t.shape.size()) +
                                         " dimensions, not " + std::to_string(shape.size()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0) throw Error(ErrorCode::kValue, impl_->label + ": resize: input '" + name + "' gets a negative extent");
      if (t.symbols[d].empty() && shape[d] != t.shape[d])
        throw Error(ErrorCode::kValue, impl_->label + ": resize: dimension " + std::to_string(d) + " of input " + t.str() +
                                           " is fixed at " + std::to_string(t.shape[d]));
      if (!t.symbols[d].empty()) {
        auto [it, fresh] = bound.emplace(t.symbols[d], shape[d]);
        if (!fresh && it->second != shape[d])
          throw Error(ErrorCode::kValue, impl_->label + ": resize: symbol '" + t.symbols[d] + "' gets two extents, " +
                                             std::to_string(it->second) + " and " + std::to_string(shape[d]));
      }
    }
    impl_->fixed[i] = shape;
  }
}

std::vector<Tensor> Model::predict(const std::vector<Tensor>& inputs) {
  Impl& m = *impl_;
  auto signature = [&] {
    std::string s;
    for (const auto& t : m.inputs) s += (s.empty() ? "" : ", ") + t.str();
    return "(" + s + ")";
  };
  if (inputs.size() != m.inputs.size())
    throw Error(ErrorCode::kValue, m.label + ": predict got " + std::to_string(inputs.size()) + " inputs; the model takes " +
                                       std::to_string(m.inputs.size()) + " " + signature());
  const Device device = m.device;
  std::vector<Shape> shapes;
  std::vector<Tensor> ready;
  std::map<std::string, int64_t> bound;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = m.inputs[i];
    const Tensor& t = inputs[i];
    auto mismatch = [&](const std::string& what) {
      throw Error(ErrorCode::kValue, m.label + ": input '" + want.name + "' " + what + "; expected " + want.str() +
                                         " (the model's inputs: " + signature() + ")");
    };
    if (!t.defined()) mismatch("is an undefined tensor");
    if (t.dtype() != want.dtype) mismatch(std::string("is ") + dtype_name(t.dtype()));
    if (t.ndim() != (int)want.shape.size()) mismatch("has shape " + t.shape().str());
    for (int d = 0; d < t.ndim(); ++d) {
      const int64_t fixed = m.fixed[i][d];
      if (fixed >= 0 && t.shape()[d] != fixed) mismatch("has shape " + t.shape().str());
      if (!want.symbols[d].empty()) {
        auto [it, fresh] = bound.emplace(want.symbols[d], t.shape()[d]);
        if (!fresh && it->second != t.shape()[d])
          mismatch("gives symbol '" + want.symbols[d] + "' the extent " + std::to_string(t.shape()[d]) + " where another input gave " +
                   std::to_string(it->second));
      }
    }
    shapes.push_back(t.shape());
    Tensor c = t.device() == device ? t : t.to(device);
    ready.push_back(c.is_contiguous() ? c : c.contiguous());
  }
  ContextSettings settings = spore::context();
  settings.device = device;
  settings.num_threads = m.num_threads;
  ContextScope scope(settings);
  if (m.map_at_predict) {
    // The mapping depends on the inputs' shapes and on the values it read: mapped again when they change.
    auto key_of = [&] {
      std::string key;
      for (const Shape& s : shapes) key += s.str();
      for (const std::string& name : m.values_read)
        for (size_t i = 0; i < m.inputs.size(); ++i)
          if (m.inputs[i].name == name) {
            const std::vector<uint8_t> b = ready[i].to(Device::cpu()).contiguous().to_bytes();
            key += "|" + name + "=" + std::string(b.begin(), b.end());
          }
      return key;
    };
    const std::string key = key_of();
    if (!m.executor || key != m.mapped_for) {
      constexpr size_t kKeptSignatures = 4;
      if (m.executor) {
        m.other_signatures.emplace_back(m.mapped_for, std::move(m.executor));
        m.other_ragged.push_back(m.ragged);
      }
      for (size_t k = 0; k < m.other_signatures.size(); ++k)
        if (m.other_signatures[k].first == key) {
          m.executor = std::move(m.other_signatures[k].second);
          m.ragged = m.other_ragged[k];
          m.other_signatures.erase(m.other_signatures.begin() + (long)k);
          m.other_ragged.erase(m.other_ragged.begin() + (long)k);
          m.mapped_for = key;
          break;
        }
      if (m.other_signatures.size() > kKeptSignatures) {
        m.other_signatures.erase(m.other_signatures.begin());
        m.other_ragged.erase(m.other_ragged.begin());
      }
      if (!m.executor) {
        std::map<std::string, Tensor> given;
        for (size_t i = 0; i < m.inputs.size(); ++i) given[m.inputs[i].name] = ready[i];
        std::vector<std::string> read;
        ir::Model mapped = onnx::read_onnx_with_inputs(m.onnx_bytes, m.label, given, &read);
        m.ragged = mapped.ragged;
        m.executor = std::make_unique<Executor>(std::move(mapped.graph), device, m.label);
        // Every input value any mapping read is part of every key from now on, so that a kept
        // mapping is only reused for the very shapes and values it was made for.
        for (const std::string& r : read)
          if (std::find(m.values_read.begin(), m.values_read.end(), r) == m.values_read.end()) m.values_read.push_back(r);
        m.mapped_for = key_of();
      }
      m.outputs = visible_outputs(m.executor->graph(), m.ragged);
    }
  }
  if (!m.executor->planned_for(shapes)) m.executor->plan(shapes);
  return narrowed(m.executor->run(ready), m.ragged);
}

std::vector<Tensor> Model::predict(const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> ordered;
  for (const TensorInfo& t : impl_->inputs) {
    auto it = inputs.find(t.name);
    if (it == inputs.end()) throw Error(ErrorCode::kValue, impl_->label + ": predict: no tensor for input " + t.str());
    ordered.push_back(it->second);
  }
  if (inputs.size() != ordered.size())
    for (const auto& [name, _] : inputs) {
      bool known = false;
      for (const TensorInfo& t : impl_->inputs) known = known || t.name == name;
      if (!known) throw Error(ErrorCode::kValue, impl_->label + ": predict: the model has no input '" + name + "'");
    }
  return predict(ordered);
}

}  // namespace spore::lite
