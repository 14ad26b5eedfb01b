// Export of a Cell (NOTE [Export], NOTE [Graph library layering]): the Cell's forward as a
// function of tensors, its parameters named as the Cell names them, handed to the graph
// library's trace_to_ir.
#include <map>
#include <string>

#include "spore/error.h"
#include "spore/export.h"
#include "spore/nn/cell.h"

namespace spore {

ir::Model trace_cell_to_ir(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const ExportOptions& options) {
  std::map<const void*, std::string> names;
  for (const auto& [name, p] : cell.named_parameters()) names[p.value().impl()] = name;
  TensorsFn fn = [&cell](const std::vector<Tensor>& in) {
    if (in.size() != 1)
      throw Error(ErrorCode::kValue, "export: a Cell takes one input; got " + std::to_string(in.size()));
    return std::vector<Tensor>{cell(in[0])};
  };
  return trace_to_ir(fn, example_inputs, options, names);
}

void export_model(nn::Cell& cell, const std::vector<Tensor>& example_inputs, const std::filesystem::path& path,
                  const ExportOptions& options) {
  ir::write_model(path, trace_cell_to_ir(cell, example_inputs, options), {options.ir_version});
}

}  // namespace spore
