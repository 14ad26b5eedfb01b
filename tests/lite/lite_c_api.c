/* The Lite C API from a C program (compiled as C, linked with spore_lite): builds the committed
 * IR file tests/fixtures/ir/dense_relu_v1.spore (y = relu(x @ w + 0.5), w = [[0..3], [4..7],
 * [8..11]]), predicts, and checks against values computed here; then the error paths. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "spore/lite_c.h"

static int failures = 0;
#define CHECK(cond)                                             \
  do {                                                          \
    if (!(cond)) {                                              \
      fprintf(stderr, "%s:%d: CHECK(%s) failed: %s\n", __FILE__, __LINE__, #cond, spore_lite_last_error()); \
      ++failures;                                               \
    }                                                           \
  } while (0)

int main(void) {
  const char* targets[] = {"cuda", "cpu"};
  SporeLiteModel* model = NULL;
  CHECK(spore_lite_model_build_from_file(SPORE_IR_FIXTURE, targets, 2, 1, &model) == SPORE_LITE_OK);
  if (!model) return 1;
  CHECK(strcmp(spore_lite_model_target(model), "cpu") == 0);
  CHECK(spore_lite_model_num_inputs(model) == 1 && spore_lite_model_num_outputs(model) == 1);
  const char* name = NULL;
  SporeLiteTensor info;
  CHECK(spore_lite_model_input(model, 0, &name, &info) == SPORE_LITE_OK);
  CHECK(strcmp(name, "x") == 0 && info.dtype == SPORE_LITE_FLOAT32 && info.ndim == 2 && info.shape[0] == 2 && info.shape[1] == 3);

  float x[6] = {-1.5f, -1.0f, -0.5f, 0.0f, 0.5f, 1.0f};
  int64_t shape[2] = {2, 3};
  SporeLiteTensor in = {SPORE_LITE_FLOAT32, 2, shape, x, sizeof x};
  CHECK(spore_lite_model_predict(model, &in, 1) == SPORE_LITE_OK);
  SporeLiteTensor out;
  CHECK(spore_lite_model_output(model, 0, &out) == SPORE_LITE_OK);
  CHECK(out.dtype == SPORE_LITE_FLOAT32 && out.ndim == 2 && out.shape[0] == 2 && out.shape[1] == 4 && out.nbytes == 32);
  const float* y = (const float*)out.data;
  for (int r = 0; r < 2; ++r)
    for (int c = 0; c < 4; ++c) {
      float acc = 0.5f;
      for (int k = 0; k < 3; ++k) acc += x[r * 3 + k] * (float)(k * 4 + c);
      float want = acc > 0 ? acc : 0;
      CHECK(fabsf(y[r * 4 + c] - want) <= 1e-6f);
    }

  /* Errors: a status and a message, never a crash. */
  float x9[9] = {0};
  int64_t bad_shape[2] = {3, 3};
  SporeLiteTensor bad = {SPORE_LITE_FLOAT32, 2, bad_shape, x9, sizeof x9};
  CHECK(spore_lite_model_predict(model, &bad, 1) == SPORE_LITE_ERROR_VALUE);
  CHECK(strstr(spore_lite_last_error(), "input 'x' has shape [3, 3]") != NULL);
  /* A shape larger than the buffer is refused, not read past the buffer's end. */
  SporeLiteTensor short_buffer = {SPORE_LITE_FLOAT32, 2, bad_shape, x, sizeof x};
  CHECK(spore_lite_model_predict(model, &short_buffer, 1) == SPORE_LITE_ERROR_VALUE);
  CHECK(strstr(spore_lite_last_error(), "needs 36 bytes, the buffer has 24") != NULL);
  CHECK(spore_lite_model_predict(model, NULL, 1) == SPORE_LITE_ERROR_VALUE);
  CHECK(spore_lite_model_output(model, 5, &out) == SPORE_LITE_ERROR_INDEX);
  CHECK(spore_lite_model_input(NULL, 0, &name, &info) == SPORE_LITE_ERROR_INDEX);
  spore_lite_model_release(model);

  SporeLiteModel* none = NULL;
  CHECK(spore_lite_model_build_from_file("/nonexistent/model.spore", NULL, 0, 0, &none) == SPORE_LITE_ERROR_IO);
  CHECK(none == NULL);
  const char* npu[] = {"npu"};
  CHECK(spore_lite_model_build_from_file(SPORE_IR_FIXTURE, npu, 1, 0, &none) == SPORE_LITE_ERROR_DEVICE);
  CHECK(strstr(spore_lite_last_error(), "npu: not built into this Spore") != NULL);
  spore_lite_model_release(NULL);
  if (failures == 0) printf("lite C API: ok\n");
  return failures == 0 ? 0 : 1;
}
