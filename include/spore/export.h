// Export: a function or a Cell traced by the graph compiler and written as a Spore IR file
// (NOTE [Export] in docs/design.md; the file format is NOTE [Model IR] in spore/ir.h).
//
//   spore::export_model(net, {x}, "net.spore");                               // newest IR version
//   spore::export_model(net, {x}, "net.spore", ExportOptions().version(1));   // for an older Lite
//   spore::export_model(net, {x}, "net.spore", ExportOptions().dynamic_axis(0, 0, "batch"));
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "spore/ir.h"
#include "spore/jit.h"

namespace spore {

namespace nn {
class Cell;
}

struct ExportOptions {
  uint32_t ir_version = ir::kNewestVersion;
  // Names of the inputs and outputs in order; default "x" / "y" for one, else "input0", "output0".
  std::vector<std::string> input_names, output_names;
  // Symbolic dimensions: input index -> (dimension -> symbol), e.g. {{0, {{0, "batch"}}}}. They
  // need IR version 2; the function is traced twice with different extents to find every value
  // the symbols reach, and an op whose attributes bake an extent in is refused by name.
  std::map<int, std::map<int, std::string>> dynamic_axes;
  bool optimize = true;  // run the graph passes before writing (constant folding, fusion, ...)
  std::vector<std::pair<std::string, std::string>> metadata;

  // Chainable setters: ExportOptions().version(1).dynamic_axis(0, 0, "batch").
  ExportOptions& version(uint32_t v) { ir_version = v; return *this; }
  ExportOptions& dynamic_axis(int input, int dim, std::string symbol) {
    dynamic_axes[input][dim] = std::move(symbol);
    return *this;
  }
  ExportOptions& meta(std::string key, std::string value) {
    metadata.emplace_back(std::move(key), std::move(value));
    return *this;
  }
};

// The IR model of fn traced on example_inputs; `names` maps captured tensors (by TensorImpl) to
// the names the file gives them, such as a Cell's parameter names.
ir::Model trace_to_ir(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const ExportOptions& options = {},
                      const std::map<const void*, std::string>& names = {});
// A Cell's forward traced the same way, its parameters named as the Cell names them
// ("fc.weight"): what export_model and export_onnx write for a Cell. The Cell overloads are
// defined on the framework side (src/nn/cell_export.cc, NOTE [Graph library layering]).
ir::Model trace_cell_to_ir(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const ExportOptions& options = {});
void export_model(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                  const ExportOptions& options = {});
// A Cell's forward; its parameters keep their names ("fc.weight").
void export_model(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                  const ExportOptions& options = {});

// ONNX (op set 17) of the same traced graph (NOTE [ONNX]): the names and dynamic axes of
// `options` apply (a symbolic dimension becomes a dim_param), ir_version does not, and the graph
// passes are off (fusion has no ONNX op). The ONNX library's checker validates the model before
// it is written. kUnsupported naming the op and node for an op with no ONNX equivalent.
void export_onnx(const TensorsFn& fn, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                 const ExportOptions& options = {});
void export_onnx(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                 const ExportOptions& options = {});
// An IR model as the bytes of a checked ONNX ModelProto.
std::string ir_to_onnx_bytes(const ir::Model& model);

}  // namespace spore
