// Internal to the CPU backend: one registration function per kernel family
// (src/backends/cpu/<family>_kernels.cc). Each registers its kernels for (op, dtype) pairs with
// spore::register_kernel(op, kCpuBackend, dtype, fn).
#pragma once
#include "spore/op_registry.h"

namespace spore::cpu {

void register_elementwise_kernels();
void register_reduce_kernels();
void register_matmul_kernels();
void register_shape_kernels();
void register_index_kernels();
void register_scatter_kernels();  // slice_scatter (scatter_add lives with the index kernels)
void register_norm_kernels();
void register_creation_kernels();
void register_conv_kernels();
void register_fused_conv_kernels();  // fused_conv2d (NOTE [Lite executor])
void register_fused_kernels();  // fused_elementwise (NOTE [Elementwise fusion])
void register_optim_kernels();
void register_int8_kernels();  // dynamic_quant_matmul (int8_kernels.cc, int8_matmul.inc)
void register_llm_kernels();  // rms_norm, rope, attention, kv_cache_write, matmul_q
void register_collective_kernels();  // all_reduce, broadcast, ... (NOTE [Collective ops])
void register_llm_grad_kernels();  // attention_grad, matmul_q_grad, float64 matmul_q (NOTE [LLM gradients])

}  // namespace spore::cpu
