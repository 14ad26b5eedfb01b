// KvCache: per layer, key and value tensors [slots, kv_heads, context, head_dim] that
// kv_cache_write fills in place (NOTE [LLM engine]).
#include "spore/error.h"
#include "spore/nlp/model.h"

namespace spore::nlp {

KvCache::KvCache(std::vector<Tensor> keys, std::vector<Tensor> values) : keys_(std::move(keys)), values_(std::move(values)) {
  if (keys_.empty() || keys_.size() != values_.size())
    throw Error(ErrorCode::kValue, "KvCache: needs one key and one value tensor per layer, got " +
                                       std::to_string(keys_.size()) + " and " + std::to_string(values_.size()));
  for (size_t l = 0; l < keys_.size(); ++l) {
    const Tensor &k = keys_[l], &v = values_[l];
    if (k.ndim() != 4 || v.ndim() != 4 || k.size(0) != v.size(0) || k.size(1) != v.size(1) || k.size(2) != v.size(2) ||
        k.dtype() != v.dtype() || k.size(0) != keys_[0].size(0) || k.size(2) != keys_[0].size(2) ||
        k.dtype() != keys_[0].dtype() || !k.is_contiguous() || !v.is_contiguous())
      throw Error(ErrorCode::kShape, "KvCache: layer " + std::to_string(l) +
                                         ": keys and values must be contiguous [slots, kv_heads, context, dim] of one "
                                         "dtype, with the same slots and context in every layer; got " +
                                         k.shape().str() + " and " + v.shape().str());
  }
}

int64_t KvCache::slots() const { return keys_[0].size(0); }
int64_t KvCache::context() const { return keys_[0].size(2); }
DType KvCache::dtype() const { return keys_[0].dtype(); }

uint64_t KvCache::nbytes() const {
  uint64_t n = 0;
  for (size_t l = 0; l < keys_.size(); ++l) n += keys_[l].nbytes() + values_[l].nbytes();
  return n;
}

}  // namespace spore::nlp

namespace spore::nlp {

Tensor CausalLM::forward_hidden(std::span<const SequenceChunk>, KvCache&) {
  throw Error(ErrorCode::kUnsupported, config().family + ": this model does not give its hidden states");
}

}  // namespace spore::nlp
