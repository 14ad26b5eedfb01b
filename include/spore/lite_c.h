/* Spore Lite's C API (NOTE [Lite runtime] in docs/design.md): status codes instead of exceptions,
 * opaque handles, and the last error's message per thread. Every function is safe to call with
 * bad arguments (NULL handles, out-of-range indices): it returns an error status, never crashes. */
#ifndef SPORE_LITE_C_H
#define SPORE_LITE_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Mirrors spore::ErrorCode, shifted by one so that 0 is success. */
typedef enum {
  SPORE_LITE_OK = 0,
  SPORE_LITE_ERROR_SHAPE,
  SPORE_LITE_ERROR_DTYPE,
  SPORE_LITE_ERROR_DEVICE,
  SPORE_LITE_ERROR_INDEX,
  SPORE_LITE_ERROR_VALUE,
  SPORE_LITE_ERROR_IO,
  SPORE_LITE_ERROR_FORMAT,
  SPORE_LITE_ERROR_VERSION,
  SPORE_LITE_ERROR_UNSUPPORTED,
  SPORE_LITE_ERROR_INTERNAL
} SporeLiteStatus;

/* Mirrors spore::DType. */
typedef enum {
  SPORE_LITE_BOOL = 0,
  SPORE_LITE_INT8,
  SPORE_LITE_UINT8,
  SPORE_LITE_INT32,
  SPORE_LITE_INT64,
  SPORE_LITE_FLOAT16,
  SPORE_LITE_BFLOAT16,
  SPORE_LITE_FLOAT32,
  SPORE_LITE_FLOAT64
} SporeLiteDType;

/* A dense, row-major tensor in host memory. Inputs are read during the call only; outputs are
 * views owned by the model, valid until its next predict or its release. `nbytes` is the size of
 * the buffer at `data`: an input whose shape needs more (or other) bytes than that is refused
 * with SPORE_LITE_ERROR_VALUE instead of being read past its end, as ONNX Runtime's
 * CreateTensorWithDataAsOrtValue takes the buffer's length. */
typedef struct {
  SporeLiteDType dtype;
  int32_t ndim;
  const int64_t* shape;
  const void* data;
  uint64_t nbytes;
} SporeLiteTensor;

typedef struct SporeLiteModel SporeLiteModel;

/* The message of this thread's last failed call ("" when none). */
const char* spore_lite_last_error(void);

/* targets: an ordered list such as {"cuda", "cpu"} (NULL or 0 targets: {"cpu"}); num_threads 0:
 * one per core. On success *out is a model to release with spore_lite_model_release. */
SporeLiteStatus spore_lite_model_build_from_file(const char* path, const char* const* targets, int32_t num_targets,
                                                 int32_t num_threads, SporeLiteModel** out);
void spore_lite_model_release(SporeLiteModel* model);

int32_t spore_lite_model_num_inputs(const SporeLiteModel* model);
int32_t spore_lite_model_num_outputs(const SporeLiteModel* model);
/* Name and signature of input/output i (shape extents -1 where symbolic); views owned by the model. */
SporeLiteStatus spore_lite_model_input(const SporeLiteModel* model, int32_t i, const char** name, SporeLiteTensor* info);
SporeLiteStatus spore_lite_model_output_info(const SporeLiteModel* model, int32_t i, const char** name, SporeLiteTensor* info);
/* The target the model was built for ("cpu"). */
const char* spore_lite_model_target(const SporeLiteModel* model);

SporeLiteStatus spore_lite_model_predict(SporeLiteModel* model, const SporeLiteTensor* inputs, int32_t num_inputs);
/* Output i of the last predict. */
SporeLiteStatus spore_lite_model_output(const SporeLiteModel* model, int32_t i, SporeLiteTensor* out);

#ifdef __cplusplus
}
#endif

#endif /* SPORE_LITE_C_H */
