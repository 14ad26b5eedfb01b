// The adapters of one forward pass (NOTE [LoRA adapters]): each sequence chunk names its own
// (SequenceChunk::lora), so per adapter the rows of the batch that run it get their scale and the
// others 0, and a projection's output gains scale_row * pair.scale * B (A x_row) - two small
// float32 products per adapter after the base product, whatever the base weight's type. Rows
// without an adapter get exactly the base's outputs; an adapter no row runs costs nothing.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "spore/nlp/lora.h"
#include "spore/nlp/model.h"
#include "spore/tensor.h"

namespace spore::nlp::lora {

class LoraBatch {
 public:
  LoraBatch() = default;
  // Rows in the order the decoder concatenates the chunks' tokens. kValue naming the chunk when
  // an adapter was loaded for another model or is null.
  LoraBatch(std::span<const SequenceChunk> chunks, const CausalLM& model);
  bool empty() const { return groups_.empty(); }
  // y (the base product of x [rows, in]) plus every adapter's update of projection p in `layer`.
  Tensor apply(const Tensor& x, const Tensor& y, int64_t layer, LoraProjection p) const;

 private:
  struct Group {
    const LoraAdapter* adapter = nullptr;
    std::vector<float> row_scales;
    Tensor scales;          // float32 [rows, 1]; undefined when every row has `uniform`
    double uniform = 0;
  };
  std::vector<Group> groups_;
};

// What the blocks of one layer hand to the batch (blocks.h): no batch, no adapters.
struct LayerLora {
  const LoraBatch* batch = nullptr;
  int64_t layer = 0;
  Tensor apply(const Tensor& x, const Tensor& y, LoraProjection p) const {
    return batch && !batch->empty() ? batch->apply(x, y, layer, p) : y;
  }
};

}  // namespace spore::nlp::lora
