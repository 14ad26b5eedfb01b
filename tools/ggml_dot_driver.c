// ggml's own CPU matrix products on random rows, for tests/fixtures/quant/ggml_dot_<type>.bin
// (tools/make_ggml_dot_fixtures.py builds this against libggml from llama-cpp-python's sdist and
// runs it; the product never links ggml). For one weight type: n rows of k random values
// quantized by ggml_quantize_chunk, m float32 activation rows, and the result of ggml_mul_mat on
// the CPU backend with the weights in the backend's repacking buffer type where it takes them
// (as llama.cpp loads a model: q4_0, q4_K, ... become interleaved row groups on x86), else in a
// plain CPU buffer: what llama.cpp computes, its activation quantization included. The results
// are written for the first 1, 2, ..., m activation rows apart (a batch of 1 takes the GEMV, 4
// the GEMM), as m blocks of m x n floats of which block b holds rows 0..b.
//
//   ggml_dot_driver TYPE_ID OUT.bin
// OUT.bin: "SPGD", int32 format 2, int32 type, n, k, m; then the n rows' bytes, the m x k float32
// activations, and for b = 1..m the b x n float32 results of the first b rows (out[r * n + i]);
// all little-endian.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"

static uint64_t state = 0x9E3779B97F4A7C15ull;
static float uniform(void) {  // xorshift64*, in [-0.5, 0.5)
  state ^= state >> 12, state ^= state << 25, state ^= state >> 27;
  return (float)((state * 0x2545F4914F6CDD1Dull) >> 40) / (float)(1 << 24) - 0.5f;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s TYPE_ID OUT.bin\n", argv[0]);
    return 2;
  }
  ggml_cpu_init();  // the float16 tables vec_dot reads
  const enum ggml_type type = (enum ggml_type)atoi(argv[1]);
  const int32_t n = 16, k = 1024, m = 9;
  float* wf = malloc(sizeof(float) * n * k);
  for (int i = 0; i < n * k; ++i) wf[i] = uniform() * (1.0f + (float)(i % 97) / 10.0f);  // uneven magnitudes per block
  const size_t rb = ggml_row_size(type, k);
  uint8_t* wq = malloc(rb * n);
  float* importance = malloc(sizeof(float) * k);  // the iq types require one; uneven, as a model's
  for (int i = 0; i < k; ++i) importance[i] = 0.5f + (float)((i * 37) % 101) / 50.0f;
  ggml_quantize_chunk(type, wf, wq, 0, n, k, importance);
  float* x = malloc(sizeof(float) * m * k);
  for (int i = 0; i < m * k; ++i) x[i] = 3.0f * uniform();
  ggml_backend_t cpu = ggml_backend_cpu_init();
  ggml_backend_dev_t dev = ggml_backend_get_device(cpu);
  ggml_backend_reg_t reg = ggml_backend_dev_backend_reg(dev);
  ggml_backend_dev_get_extra_bufts_t extra_fn =
      (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
  float* out = malloc(sizeof(float) * m * n * m);
  const char* used = "cpu";
  for (int rows = 1; rows <= m; ++rows) {
    struct ggml_init_params ip = {16 * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
    struct ggml_context* wctx = ggml_init(ip);
    struct ggml_tensor* wt = ggml_new_tensor_2d(wctx, type, k, n);
    // The first extra buffer type (the repacking one) when it supports this product, as
    // llama.cpp's loader picks it; else the plain CPU buffer.
    ggml_backend_buffer_t wbuf = NULL;
    struct ggml_context* xctx = ggml_init(ip);
    struct ggml_tensor* xt = ggml_new_tensor_2d(xctx, GGML_TYPE_F32, k, rows);
    struct ggml_tensor* yt = ggml_mul_mat(xctx, wt, xt);
    for (ggml_backend_buffer_type_t* b = extra_fn ? extra_fn(dev) : NULL; b && *b && !wbuf; ++b) {
      wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, *b);
      if (wbuf && !ggml_backend_dev_supports_op(dev, yt)) {
        ggml_backend_buffer_free(wbuf);
        wbuf = NULL;
        ggml_free(wctx);
        wctx = ggml_init(ip);
        wt = ggml_new_tensor_2d(wctx, type, k, n);
        yt->src[0] = wt;
      } else if (wbuf) {
        used = ggml_backend_buft_name(*b);
      }
    }
    if (!wbuf) wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, ggml_backend_cpu_buffer_type());
    ggml_backend_tensor_set(wt, wq, 0, rb * n);
    ggml_backend_buffer_t xbuf = ggml_backend_alloc_ctx_tensors_from_buft(xctx, ggml_backend_cpu_buffer_type());
    ggml_backend_tensor_set(xt, x, 0, sizeof(float) * k * rows);
    struct ggml_cgraph* g = ggml_new_graph(xctx);
    ggml_build_forward_expand(g, yt);
    if (ggml_backend_graph_compute(cpu, g) != GGML_STATUS_SUCCESS) return 1;
    ggml_backend_tensor_get(yt, out + (size_t)(rows - 1) * m * n, 0, sizeof(float) * n * rows);
    ggml_backend_buffer_free(xbuf);
    ggml_backend_buffer_free(wbuf);
    ggml_free(xctx);
    ggml_free(wctx);
  }
  FILE* f = fopen(argv[2], "wb");
  if (!f) {
    perror(argv[2]);
    return 1;
  }
  const int32_t header[5] = {2, (int32_t)type, n, k, m};
  fwrite("SPGD", 1, 4, f);
  fwrite(header, sizeof header, 1, f);
  fwrite(wq, rb, n, f);
  fwrite(x, sizeof(float), (size_t)m * k, f);
  for (int rows = 1; rows <= m; ++rows) fwrite(out + (size_t)(rows - 1) * m * n, sizeof(float), (size_t)rows * n, f);
  printf("%s: weights in the %s buffer\n", ggml_type_name(type), used);
  return fclose(f) == 0 ? 0 : 1;
}
