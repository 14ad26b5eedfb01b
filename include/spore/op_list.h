// The index of every op Spore defines, in one X-macro list. Each op's definition (attributes,
// inference, backward rule) lives in src/ops/<family>.cc; this list only names and numbers them
// so that tables can be arrays. The IR stores op names, never these numbers.
#pragma once
#include <cstdint>

// clang-format off
#define SPORE_OP_LIST(X)                                                                        \
  /* elementwise binary */                                                                      \
  X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum)                                      \
  X(eq) X(ne) X(lt) X(le) X(gt) X(ge) X(logical_and) X(logical_or)                              \
  /* elementwise unary */                                                                       \
  X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(sin) X(cos) X(tanh) X(sigmoid) X(erf)          \
  X(relu) X(relu6) X(gelu) X(gelu_tanh) X(silu) X(logical_not)                                  \
  /* other elementwise */                                                                       \
  X(where) X(cast) X(copy)                                                                      \
  /* reductions */                                                                              \
  X(sum) X(mean) X(max) X(min) X(argmax) X(argmin) X(var)                                       \
  /* linear algebra */                                                                          \
  X(matmul)                                                                                     \
  /* shape and views */                                                                         \
  X(reshape) X(permute) X(slice) X(expand) X(concat) X(slice_scatter)                          \
  /* indexing */                                                                                \
  X(gather) X(index_select) X(embedding) X(scatter_add)                                         \
  /* convolution and pooling (NCHW) */                                                          \
  X(conv2d) X(conv2d_grad_input) X(conv2d_grad_weight)                                          \
  X(max_pool2d) X(max_pool2d_grad) X(avg_pool2d) X(avg_pool2d_grad)                             \
  X(adaptive_avg_pool2d) X(adaptive_avg_pool2d_grad)                                            \
  /* normalisation */                                                                           \
  X(softmax) X(log_softmax)                                                                     \
  /* creation */                                                                                \
  X(fill) X(arange) X(random_uniform) X(random_normal)                                          \
  /* optimizer updates: in place on their inputs, no outputs */                                 \
  X(sgd_update) X(adam_update)                                                                  \
  /* in-place write: input 0 = input 1 (Tensor::copy_) */                                       \
  X(assign)                                                                                     \
  /* a fused chain of elementwise ops (graph passes, NOTE [Elementwise fusion]) */              \
  X(fused_elementwise)                                                                          \
  /* LLM blocks (NOTE [LLM blocks]); kv_cache_write writes its cache input in place */          \
  X(rms_norm) X(rope) X(attention) X(kv_cache_write)                                            \
  /* products with GGUF-quantized weights (NOTE [Quantized kernels]) */                         \
  X(matmul_q)                                                                                   \
  X(attention_grad) X(matmul_q_grad)  /* LLM backward kernels (NOTE [LLM gradients]) */          \
  /* convolution + per-channel bias + clamp, substituted by Lite at load (NOTE [Lite executor]) */ \
  X(fused_conv2d)                                                                               \
  /* control flow with subgraphs, run by the graph executor (NOTE [Control flow]) */            \
  X(while_loop) X(if_else)                                                                       \
  /* collectives across processes, run through spore::dist (NOTE [Collective ops]) */         \
  X(all_reduce) X(broadcast) X(all_gather) X(reduce_scatter) X(barrier)                         \
  /* float32 x quantized at run time times an int8 weight (NOTE [Dynamic int8 products]) */    \
  X(dynamic_quant_matmul)                                                                       \
  /* exact int32 sums of a uint8 x an int8 weight with offsets (NOTE [Integer products]) */      \
  X(integer_matmul)                                                                             \
  /* round half to even, an elementwise op (NOTE [Elementwise dtypes]) */                        \
  X(round)
// clang-format on

namespace spore {

enum class OpId : uint16_t {
#define SPORE_OP_ENUM(name) k_##name,
  SPORE_OP_LIST(SPORE_OP_ENUM)
#undef SPORE_OP_ENUM
      kCount
};
inline constexpr int kNumOps = static_cast<int>(OpId::kCount);

// NOTE [Op-set version]
// The IR records which op set a graph was written with. Adding, removing or changing the meaning
// of an op changes the op set, so its version must change with it: the static_assert below fails
// when the list changes and reminds whoever changed it to bump kOpSetVersion and the count.
// Version 2 added slice_scatter and scatter_add (the gradients of slice and gather); version 3
// added assign (Tensor::copy_ as an op that declares it writes its first input). Version 4 added
// fused_elementwise (the elementwise fusion pass's node) and the LLM blocks rms_norm, rope,
// attention, kv_cache_write and matmul_q. Version 5 added fused_conv2d (Lite's load-time
// convolution + bias + activation). Version 6 added while_loop (a node with condition and body
// subgraphs). Version 7 added attention_grad and matmul_q_grad (NOTE [LLM gradients]) and made
// matmul_q's type an integer attribute, the ggml type id (NOTE [Quantization types]). Version 8
// added the collectives all_reduce, broadcast, all_gather, reduce_scatter and barrier (NOTE
// [Collective ops]). Version 9 added if_else (a node with then and else subgraphs, NOTE [Lite
// control flow]). Version 10 added dynamic_quant_matmul (NOTE [Dynamic int8 products]). Version 11
// added integer_matmul (NOTE [Integer products]) and round.
inline constexpr int kOpSetVersion = 11;
static_assert(kNumOps == 90, "the op list changed: bump kOpSetVersion and update this count");

}  // namespace spore
