// Spore Lite: the inference runtime, a library of its own (spore_lite) that loads a model file
// and predicts (NOTE [Lite runtime] in docs/design.md). It links the core tensors, the op registry
// with the backends' kernels and the format library's readers, and nothing of autograd, nn,
// optimizers, data or the graph compiler (ctest layering.lite_links_without_framework).
// MindSpore Lite's spelling: Context (ordered targets, threads), Model::build_from_file(path,
// ModelType, context), predict.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "spore/dtype.h"
#include "spore/tensor.h"

namespace spore::lite {

// The file formats Lite reads. kAuto looks at the file's first bytes.
enum class ModelType { kAuto, kSpore, kMindIR, kONNX };
const char* model_type_name(ModelType t);

struct Context {
  // Targets in order of preference ("cuda", "cpu", or a registered backend's name): the first one
  // this build has with a device present is used; the others are skipped and reported.
  std::vector<std::string> targets = {"cpu"};
  int num_threads = 0;  // 0: one per core
};

// An input's or output's signature: a symbolic dimension has extent -1 and a symbol.
struct TensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<std::string> symbols;  // per dimension; "" where fixed
  // An ONNX output of a type Spore carries in a wider dtype (NOTE [ONNX carried types]): the
  // file's type ("uint16", "float8e4m3fn"); `dtype` is then its carrier. Empty otherwise.
  std::string carried;
  std::string str() const;           // "x: float32[batch, 3]"
};

class Model {
 public:
  // Version first (kVersion: the file's version, the versions this runtime reads, the ways out),
  // then the whole file's checks (kFormat), then the targets in order (kDevice when none is
  // available, listing each and why), then planning every node (the op's own errors, naming it).
  // Never crashes on any input file.
  static Model build_from_file(const std::filesystem::path& path, ModelType type = ModelType::kAuto,
                               const Context& context = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The target the model was built for, and the targets skipped before it with the reason.
  const std::string& target() const;
  const std::vector<std::string>& skipped_targets() const;
  // Fixes symbolic dimensions: input name -> full shape. kValue naming the input when a fixed
  // extent would change or a symbol would get two extents.
  void resize(const std::map<std::string, std::vector<int64_t>>& shapes);
  // Inputs in the order of inputs(); kValue naming the input and the expected signature when the
  // count, a dtype or a shape is wrong. Outputs in the order of outputs().
  std::vector<Tensor> predict(const std::vector<Tensor>& inputs);
  // The same by name.
  std::vector<Tensor> predict(const std::map<std::string, Tensor>& inputs);

  struct Impl;

 private:
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The IR versions this runtime reads, for messages and `spore lite run --version`.
std::pair<uint32_t, uint32_t> readable_ir_versions();

}  // namespace spore::lite
