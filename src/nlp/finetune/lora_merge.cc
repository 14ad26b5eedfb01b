// `spore merge` (include/spore/nlp/lora_merge.h, NOTE [LoRA merge]): the checks on the paths, the
// adapters bound to the base's config and matched to its tensors, the float64 update, and the
// writer each pair of formats takes.
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "nlp/finetune/lora_merge_internal.h"
#include "nlp/lora/lora_files.h"
#include "nlp/models/family.h"
#include "spore/error.h"
#include "spore/format.h"
#include "spore/gguf.h"
#include "spore/nlp/convert.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

namespace fs = std::filesystem;

namespace merge {

void apply_updates(const std::string& name, std::span<float> w, int64_t rows, int64_t cols,
                   const std::vector<Update>& updates) {
  struct Pair {
    const float *a, *b;
    int64_t rank;
    double scale;
  };
  std::vector<Tensor> keep;  // contiguous copies where the adapter's tensors are views
  std::vector<Pair> pairs;
  for (const Update& u : updates) {
    const Tensor a = u.pair->a.contiguous(), b = u.pair->b.contiguous();
    if (a.ndim() != 2 || b.ndim() != 2 || b.size(0) != rows || a.size(1) != cols || a.size(0) != b.size(1))
      throw Error(ErrorCode::kShape, "merge: \"" + name + "\" is [" + std::to_string(rows) + ", " + std::to_string(cols) +
                                         "] but an adapter's pair for it is B [" + std::to_string(b.size(0)) + ", " +
                                         std::to_string(b.size(1)) + "] x A [" + std::to_string(a.size(0)) + ", " +
                                         std::to_string(a.size(1)) + "] (an adapter for another model?)");
    pairs.push_back({a.data<float>(), b.data<float>(), a.size(0), u.scale});
    keep.push_back(a);
    keep.push_back(b);
  }
  std::vector<double> acc(static_cast<size_t>(cols));
  for (int64_t o = 0; o < rows; ++o) {
    float* row = w.data() + o * cols;
    for (int64_t i = 0; i < cols; ++i) acc[i] = row[i];
    for (const Pair& p : pairs)
      for (int64_t k = 0; k < p.rank; ++k) {
        const double coef = p.scale * static_cast<double>(p.b[o * p.rank + k]);
        const float* a_row = p.a + k * cols;
        for (int64_t i = 0; i < cols; ++i) acc[i] += coef * static_cast<double>(a_row[i]);
      }
    for (int64_t i = 0; i < cols; ++i) row[i] = static_cast<float>(acc[i]);
  }
}

}  // namespace merge

namespace {

const std::vector<std::string> kTypes = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_k", "same"};

std::string type_list() {
  std::string s;
  for (const std::string& t : kTypes) s += (s.empty() ? "" : ", ") + t;
  return s;
}

bool ends_with_gguf(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext == ".gguf";
}

// The path with symlinks and dots resolved as far as it exists, for comparing inputs and outputs.
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p), ec);
  return ec ? fs::absolute(p).lexically_normal() : r;
}

bool inside(const fs::path& child, const fs::path& dir) {
  const auto c = child.begin(), d = dir.begin();
  auto ci = c, di = d;
  for (; di != dir.end(); ++di, ++ci)
    if (ci == child.end() || *ci != *di) return false;
  return true;
}

// Refuses an out path that would replace or hold an input, or that cannot be written.
void check_out(const fs::path& out, bool out_gguf, const std::vector<fs::path>& inputs) {
  if (out.empty()) throw Error(ErrorCode::kValue, "merge: give --out (a .gguf file or a new folder)");
  const fs::path r = resolved(out);
  for (const fs::path& in : inputs) {
    const fs::path ri = resolved(in);
    if (r == ri || (!out_gguf && inside(ri, r)))
      throw Error(ErrorCode::kValue, "merge: --out " + out.string() + " would overwrite the input " + in.string() +
                                         "; write the merged model to a new path");
  }
  const fs::path parent = r.parent_path();
  std::error_code ec;
  if (!fs::is_directory(parent, ec))
    throw Error(ErrorCode::kIO, "merge: --out " + out.string() + ": the folder " + parent.string() +
                                    " does not exist; create it first");
  if (::access(parent.c_str(), W_OK | X_OK) != 0)
    throw Error(ErrorCode::kIO, "merge: --out " + out.string() + ": the folder " + parent.string() +
                                    " is not writable; choose a folder you can write to");
  if (out_gguf) {
    if (fs::is_directory(r, ec))
      throw Error(ErrorCode::kValue, "merge: --out " + out.string() + " is a folder; name the .gguf file to write");
  } else if (fs::exists(r, ec)) {
    if (!fs::is_directory(r, ec) || !fs::is_empty(r, ec))
      throw Error(ErrorCode::kValue, "merge: --out " + out.string() + " exists and is not an empty folder; a merged "
                                         "Hugging Face model goes to a new folder (or end the path in .gguf)");
  }
}

// A folder beside `out` for the work in progress, removed unless it is renamed into place.
struct ScratchDir {
  fs::path path;
  explicit ScratchDir(const fs::path& out) {
    const fs::path r = resolved(out);
    path = r.parent_path() / ("." + r.filename().string() + ".merge-" + std::to_string(::getpid()));
    std::error_code ec;
    fs::remove_all(path, ec);
    if (!fs::create_directory(path, ec))
      throw Error(ErrorCode::kIO, "merge: cannot create the folder " + path.string() + ": " + ec.message());
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
};

// [rows, cols] of each of the base's 2-D tensors, by name.
using Shapes = std::map<std::string, std::pair<int64_t, int64_t>>;

Shapes gguf_shapes(const GgufFile& g) {
  Shapes s;
  for (const GgufTensorInfo& t : g.tensors())
    if (t.dims.size() == 2) s[t.name] = {(int64_t)t.dims[1], (int64_t)t.dims[0]};
    else s[t.name] = {-1, -1};
  return s;
}

Shapes hf_shapes(const fs::path& dir) {
  Shapes s;
  std::vector<std::string> files;
  std::error_code ec;
  if (fs::exists(dir / "model.safetensors.index.json", ec)) {
    const auto bytes = read_file_bytes(dir / "model.safetensors.index.json");
    std::set<std::string> uniq;
    for (const auto& [name, file] : parse_safetensors_index(std::string(bytes.begin(), bytes.end()),
                                                            (dir / "model.safetensors.index.json").string()))
      uniq.insert(file);
    files.assign(uniq.begin(), uniq.end());
  } else {
    files.push_back("model.safetensors");
  }
  for (const std::string& f : files) {
    if (!fs::exists(dir / f, ec))
      throw Error(ErrorCode::kIO, "merge: " + (dir / f).string() + " is missing (the base's weights)");
    const SafeTensorsFile file(dir / f);
    for (const SafeTensorInfo& t : file.tensors())
      s[t.name] = t.shape.ndim() == 2 ? std::make_pair(t.shape[0], t.shape[1]) : std::make_pair<int64_t, int64_t>(-1, -1);
  }
  return s;
}

// The adapters bound to the base's config, and the tensors they update checked against the base.
merge::Plan make_plan(const ModelConfig& config, bool gguf_base, const std::vector<MergeAdapter>& adapters,
                      const Shapes& shapes, const std::string& base_source) {
  const models::Family* fam = models::find_family(config.family);
  if (!fam) throw Error(ErrorCode::kUnsupported, "merge: model family " + config.family + " is not built in");
  merge::Plan plan;
  plan.adapters.reserve(adapters.size());  // Update points into it
  for (const MergeAdapter& a : adapters) plan.adapters.push_back(lora::load_adapter(a.path, config, gguf_base));
  for (size_t i = 0; i < adapters.size(); ++i) {
    const LoraAdapter& a = plan.adapters[i];
    for (size_t layer = 0; layer < a.layers.size(); ++layer)
      for (size_t p = 0; p < a.layers[layer].size(); ++p) {
        const LoraPair& pair = a.layers[layer][p];
        if (!pair.defined()) continue;
        const models::TensorName& t = lora::projection_tensor(fam->names, static_cast<LoraProjection>(p));
        const std::string name = models::layer_name(gguf_base ? t.gguf : t.hf, (int64_t)layer);
        const auto it = shapes.find(name);
        if (it == shapes.end())
          throw Error(ErrorCode::kFormat, "merge: " + adapters[i].path.string() + " updates \"" + name + "\", which " +
                                              base_source + " does not have (an adapter for another model?)");
        if (it->second.first != pair.b.size(0) || it->second.second != pair.a.size(1))
          throw Error(ErrorCode::kShape, "merge: " + adapters[i].path.string() + " updates \"" + name + "\" with [" +
                                             std::to_string(pair.b.size(0)) + ", " + std::to_string(pair.a.size(1)) +
                                             "] but " + base_source + " holds it as [" + std::to_string(it->second.first) +
                                             ", " + std::to_string(it->second.second) + "]");
        if (adapters[i].scale == 0) continue;  // checked, but the base exactly (a retype alone)
        plan.updates[name].push_back({&pair, adapters[i].scale * pair.scale});
        ++plan.pairs;
      }
  }
  return plan;
}

}  // namespace

MergeReport merge_lora(const fs::path& base, const std::vector<MergeAdapter>& adapters, const fs::path& out,
                       const MergeOptions& options) {
  if (std::find(kTypes.begin(), kTypes.end(), options.type) == kTypes.end())
    throw Error(ErrorCode::kValue, "merge: --type '" + options.type + "' is not one of " + type_list());
  if (adapters.empty()) throw Error(ErrorCode::kValue, "merge: give at least one adapter (--lora PATH[:SCALE])");
  std::error_code ec;
  if (!fs::exists(base, ec))
    throw Error(ErrorCode::kIO, "merge: --model " + base.string() + ": no such file or directory");
  const bool gguf_base = !fs::is_directory(base, ec);
  if (!gguf_base && !fs::exists(base / "config.json", ec))
    throw Error(ErrorCode::kFormat, "merge: --model " + base.string() + " has no config.json; the base is a Hugging "
                                                                       "Face model folder or a .gguf file");
  const bool out_gguf = ends_with_gguf(out);
  if (gguf_base && !out_gguf)
    throw Error(ErrorCode::kUnsupported, "merge: a GGUF base merges into a GGUF file; end --out in .gguf (a Hugging "
                                         "Face folder is written from a Hugging Face base)");
  const bool quantized = options.type.rfind("q", 0) == 0;
  if (!out_gguf && quantized)
    throw Error(ErrorCode::kValue, "merge: --type " + options.type + " is a GGUF type; a Hugging Face folder holds f32, "
                                   "f16 or bf16 (end --out in .gguf for " + options.type + ")");
  std::vector<fs::path> inputs{base};
  for (const MergeAdapter& a : adapters) inputs.push_back(a.path);
  check_out(out, out_gguf, inputs);

  MergeReport report;
  report.base_format = gguf_base ? "gguf" : "safetensors";
  report.out_format = out_gguf ? "gguf" : "safetensors";
  if (gguf_base) {
    const GgufFile g(base);
    const ModelConfig config = ModelConfig::from_gguf(g);
    report.family = config.family;
    const merge::Plan plan = make_plan(config, true, adapters, gguf_shapes(g), base.string());
    report.adapter_pairs = plan.pairs;
    merge::write_gguf(base, plan, out, options, report);
    report.out_bytes = fs::file_size(out);
    return report;
  }
  const ModelConfig config = ModelConfig::from_hf_json(base / "config.json");
  report.family = config.family;
  const merge::Plan plan = make_plan(config, false, adapters, hf_shapes(base), base.string());
  report.adapter_pairs = plan.pairs;
  std::optional<DType> dtype;  // nullopt: each tensor keeps its own
  if (out_gguf) dtype = DType::kFloat32;  // converted from float32: the weights are rounded once
  else if (options.type == "f32") dtype = DType::kFloat32;
  else if (options.type == "f16") dtype = DType::kFloat16;
  else if (options.type == "bf16") dtype = DType::kBFloat16;
  ScratchDir scratch(out);
  const DType shared = merge::write_hf_dir(base, plan, scratch.path, dtype, report);
  if (out_gguf) {
    ConvertOptions co;
    co.type = options.type != "same"              ? options.type
              : shared == DType::kFloat16         ? "f16"
              : shared == DType::kBFloat16        ? "bf16"
                                                  : "f32";
    co.name = resolved(base).filename().string();
    co.progress = options.progress;
    const ConvertReport cr = convert_hf_to_gguf(scratch.path, out, co);
    report.tensors = (int64_t)cr.tensors.size();
    report.notes.clear();
    for (const ConvertedTensor& t : cr.tensors)
      if (!t.fallback.empty()) report.notes.push_back(t.name + ": " + t.fallback);
    report.out_bytes = cr.file_bytes;
    return report;
  }
  const fs::path target = resolved(out);
  fs::rename(scratch.path, target, ec);  // replaces an empty folder; atomic within the folder
  if (ec)
    throw Error(ErrorCode::kIO, "merge: cannot move the merged model to " + target.string() + ": " + ec.message());
  scratch.path.clear();
  for (const auto& e : fs::directory_iterator(target)) report.out_bytes += e.is_regular_file() ? e.file_size() : 0;
  return report;
}

}  // namespace spore::nlp
