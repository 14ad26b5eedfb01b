// The C API over spore::lite (include/spore/lite_c.h): exceptions become status codes and a
// per-thread message; handles are checked before use.
#include "spore/lite_c.h"

#include <new>
#include <string>
#include <vector>

#include "spore/error.h"
#include "spore/lite.h"

struct SporeLiteModel {
  spore::lite::Model model;
  std::vector<std::vector<int64_t>> input_shapes, output_shapes;  // signatures, kept for the views
  std::vector<spore::Tensor> outputs;                              // of the last predict
  std::vector<std::vector<int64_t>> result_shapes;
};

namespace {

thread_local std::string g_last_error;

SporeLiteStatus fail(SporeLiteStatus s, std::string message) {
  g_last_error = std::move(message);
  return s;
}

template <typename Fn>
SporeLiteStatus guarded(Fn&& fn) {
  try {
    g_last_error.clear();
    fn();
    return SPORE_LITE_OK;
  } catch (const spore::Error& e) {
    return fail((SporeLiteStatus)((int)e.code() + 1), e.what());
  } catch (const std::bad_alloc&) {
    return fail(SPORE_LITE_ERROR_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return fail(SPORE_LITE_ERROR_INTERNAL, e.what());
  }
}

void describe(const spore::lite::TensorInfo& t, const std::vector<int64_t>& shape, SporeLiteTensor* out) {
  out->dtype = (SporeLiteDType)t.dtype;
  out->ndim = (int32_t)shape.size();
  out->shape = shape.data();
  out->data = nullptr;
  out->nbytes = 0;
}

}  // namespace

extern "C" {

const char* spore_lite_last_error(void) { return g_last_error.c_str(); }

SporeLiteStatus spore_lite_model_build_from_file(const char* path, const char* const* targets, int32_t num_targets,
                                                 int32_t num_threads, SporeLiteModel** out) {
  if (!path || !out) return fail(SPORE_LITE_ERROR_VALUE, "spore_lite_model_build_from_file: path and out must not be NULL");
  *out = nullptr;
  if (num_targets < 0 || (num_targets > 0 && !targets))
    return fail(SPORE_LITE_ERROR_VALUE, "spore_lite_model_build_from_file: bad target list");
  return guarded([&] {
    spore::lite::Context ctx;
    ctx.num_threads = num_threads;
    if (num_targets > 0) {
      ctx.targets.clear();
      for (int32_t i = 0; i < num_targets; ++i) {
        if (!targets[i]) throw spore::Error(spore::ErrorCode::kValue, "target " + std::to_string(i) + " is NULL");
        ctx.targets.emplace_back(targets[i]);
      }
    }
    auto model = spore::lite::Model::build_from_file(path, spore::lite::ModelType::kAuto, ctx);
    auto* handle = new SporeLiteModel{std::move(model), {}, {}, {}, {}};
    for (const auto& t : handle->model.inputs()) handle->input_shapes.push_back(t.shape);
    for (const auto& t : handle->model.outputs()) handle->output_shapes.push_back(t.shape);
    *out = handle;
  });
}

void spore_lite_model_release(SporeLiteModel* model) { delete model; }

int32_t spore_lite_model_num_inputs(const SporeLiteModel* model) { return model ? (int32_t)model->model.inputs().size() : 0; }
int32_t spore_lite_model_num_outputs(const SporeLiteModel* model) { return model ? (int32_t)model->model.outputs().size() : 0; }

const char* spore_lite_model_target(const SporeLiteModel* model) { return model ? model->model.target().c_str() : ""; }

SporeLiteStatus spore_lite_model_input(const SporeLiteModel* model, int32_t i, const char** name, SporeLiteTensor* info) {
  if (!model || !info || i < 0 || i >= spore_lite_model_num_inputs(model))
    return fail(SPORE_LITE_ERROR_INDEX, "spore_lite_model_input: no input " + std::to_string(i));
  const auto& t = model->model.inputs()[i];
  if (name) *name = t.name.c_str();
  describe(t, model->input_shapes[i], info);
  return SPORE_LITE_OK;
}

SporeLiteStatus spore_lite_model_output_info(const SporeLiteModel* model, int32_t i, const char** name, SporeLiteTensor* info) {
  if (!model || !info || i < 0 || i >= spore_lite_model_num_outputs(model))
    return fail(SPORE_LITE_ERROR_INDEX, "spore_lite_model_output_info: no output " + std::to_string(i));
  const auto& t = model->model.outputs()[i];
  if (name) *name = t.name.c_str();
  describe(t, model->output_shapes[i], info);
  return SPORE_LITE_OK;
}

SporeLiteStatus spore_lite_model_predict(SporeLiteModel* model, const SporeLiteTensor* inputs, int32_t num_inputs) {
  if (!model || (num_inputs > 0 && !inputs) || num_inputs < 0)
    return fail(SPORE_LITE_ERROR_VALUE, "spore_lite_model_predict: NULL model or inputs");
  return guarded([&] {
    std::vector<spore::Tensor> xs;
    for (int32_t i = 0; i < num_inputs; ++i) {
      const SporeLiteTensor& t = inputs[i];
      if ((int)t.dtype < 0 || (int)t.dtype >= spore::kNumDTypes || t.ndim < 0 || t.ndim > spore::kMaxDims ||
          (t.ndim > 0 && !t.shape) || !t.data)
        throw spore::Error(spore::ErrorCode::kValue, "input " + std::to_string(i) + " is not a valid SporeLiteTensor");
      std::vector<int64_t> dims(t.shape, t.shape + t.ndim);
      for (int64_t d : dims)
        if (d < 0) throw spore::Error(spore::ErrorCode::kValue, "input " + std::to_string(i) + " has a negative extent");
      const spore::Shape shape(dims);  // numel() throws kShape on overflow
      const uint64_t need = (uint64_t)shape.numel() * spore::dtype_size((spore::DType)t.dtype);
      if (need != t.nbytes)
        throw spore::Error(spore::ErrorCode::kValue, "input " + std::to_string(i) + ": its shape " + shape.str() + " needs " +
                                                         std::to_string(need) + " bytes, the buffer has " +
                                                         std::to_string(t.nbytes));
      xs.push_back(spore::Tensor::from_bytes(t.data, spore::Shape(dims), (spore::DType)t.dtype, spore::Device::cpu()));
    }
    model->outputs = model->model.predict(xs);
    model->result_shapes.clear();
    for (auto& y : model->outputs) {
      if (y.device() != spore::Device::cpu() || !y.is_contiguous()) y = y.to(spore::Device::cpu()).contiguous();
      model->result_shapes.emplace_back(y.shape().begin(), y.shape().end());
    }
  });
}

SporeLiteStatus spore_lite_model_output(const SporeLiteModel* model, int32_t i, SporeLiteTensor* out) {
  if (!model || !out || i < 0 || i >= (int32_t)model->outputs.size())
    return fail(SPORE_LITE_ERROR_INDEX, "spore_lite_model_output: no output " + std::to_string(i) + " (call predict first)");
  const spore::Tensor& y = model->outputs[i];
  out->dtype = (SporeLiteDType)y.dtype();
  out->ndim = (int32_t)model->result_shapes[i].size();
  out->shape = model->result_shapes[i].data();
  out->data = y.data_ptr();
  out->nbytes = y.nbytes();
  return SPORE_LITE_OK;
}

}  // extern "C"
