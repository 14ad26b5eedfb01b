// Per-row adapter scales of one forward pass (lora_batch.h, NOTE [LoRA adapters]).
#include "nlp/lora/lora_batch.h"

#include "spore/error.h"
#include "spore/ops.h"

namespace spore::nlp::lora {

LoraBatch::LoraBatch(std::span<const SequenceChunk> chunks, const CausalLM& model) {
  int64_t rows = 0;
  for (const SequenceChunk& ch : chunks) rows += static_cast<int64_t>(ch.tokens.size());
  int64_t off = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    const SequenceChunk& ch = chunks[c];
    const int64_t len = static_cast<int64_t>(ch.tokens.size());
    for (const LoraUse& u : ch.lora) {
      if (!u.adapter)
        throw Error(ErrorCode::kValue, "forward: chunk " + std::to_string(c) + " names a null LoRA adapter");
      if (u.adapter->model != &model)
        throw Error(ErrorCode::kValue, "forward: chunk " + std::to_string(c) + "'s LoRA adapter " +
                                           u.adapter->path.string() + " was loaded for another model (load_lora "
                                           "with this one)");
      if (u.scale == 0) continue;
      Group* g = nullptr;
      for (Group& have : groups_)
        if (have.adapter == u.adapter.get()) g = &have;
      if (!g) {
        groups_.push_back(Group{u.adapter.get(), std::vector<float>(static_cast<size_t>(rows), 0.0f), {}, 0});
        g = &groups_.back();
      }
      for (int64_t r = off; r < off + len; ++r) g->row_scales[static_cast<size_t>(r)] += static_cast<float>(u.scale);
    }
    off += len;
  }
  for (Group& g : groups_) {
    bool same = true;
    for (float s : g.row_scales) same = same && s == g.row_scales[0];
    if (same)
      g.uniform = g.row_scales[0];
    else
      g.scales = Tensor::from_vector(g.row_scales, Shape{rows, 1});
  }
}

Tensor LoraBatch::apply(const Tensor& x, const Tensor& y, int64_t layer, LoraProjection p) const {
  Tensor out = y;
  for (const Group& g : groups_) {
    const LoraPair& pair = g.adapter->at(layer, p);
    if (!pair.defined()) continue;
    Tensor t = matmul(x, transpose(pair.a, 0, 1));  // [rows, rank]
    t = g.scales.defined() ? mul(mul(t, g.scales), pair.scale) : mul(t, g.uniform * pair.scale);
    out = add(out, matmul(t, transpose(pair.b, 0, 1)));
  }
  return out;
}

}  // namespace spore::nlp::lora
