// Link placeholders for include/spore/nlp/model.h while the model loader (src/nlp/model_*.cc,
// src/nlp/models/, branch wip-llm-models) is not in the tree: src/CMakeLists.txt compiles this
// file only when no such source exists, so it drops out by itself when the loader is merged.
// KvCache's accessors are real (the generation tests build caches for their own test models);
// load_model and default_model_path refuse with kUnsupported.
#include "spore/error.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

KvCache::KvCache(std::vector<Tensor> keys, std::vector<Tensor> values) : keys_(std::move(keys)), values_(std::move(values)) {
  if (keys_.empty() || keys_.size() != values_.size())
    throw Error(ErrorCode::kValue, "KvCache: keys and values must be one tensor per layer, at least one layer");
}
int64_t KvCache::slots() const { return keys_.front().size(0); }
int64_t KvCache::context() const { return keys_.front().size(2); }
DType KvCache::dtype() const { return keys_.front().dtype(); }
uint64_t KvCache::nbytes() const {
  uint64_t n = 0;
  for (const Tensor& t : keys_) n += t.nbytes();
  for (const Tensor& t : values_) n += t.nbytes();
  return n;
}

LoadedModel load_model(const std::filesystem::path& path, const LoadOptions&) {
  throw Error(ErrorCode::kUnsupported, "load_model(" + path.string() +
                                           "): this build has no model loader (it comes with the llm-models work)");
}

std::filesystem::path default_model_path() {
  throw Error(ErrorCode::kUnsupported, "default_model_path: this build has no model loader (it comes with the llm-models work)");
}

}  // namespace spore::nlp
