// jit of a Cell and graph mode's compiled forward (NOTE [Graph library layering]): the Cell
// becomes a function of tensors, which the graph library compiles.
#include "nn/cell_jit.h"

#include <memory>
#include <string>

#include "spore/error.h"
#include "spore/jit.h"

namespace spore {

JitFunction jit(nn::Cell& cell, JitOptions options) {
  if (options.name == "jit") options.name = "jit(" + cell.name() + ")";
  // The training flag selects a graph (dropout and batch norm differ), so it is a static argument.
  return jit(TensorsStaticFn([&cell](const std::vector<Tensor>& in, const StaticArgs&) {
               if (in.size() != 1)
                 throw Error(ErrorCode::kValue, cell.name() + ": a Cell takes 1 input, got " + std::to_string(in.size()));
               return std::vector<Tensor>{cell(in[0])};
             }),
             std::move(options));
}

namespace nn {

Tensor call_compiled(Cell& cell, const Tensor& x) {
  std::shared_ptr<void>& slot = cell.graph_cache();
  if (!slot) slot = std::make_shared<JitFunction>(jit(cell));
  JitFunction& f = *static_cast<JitFunction*>(slot.get());
  return f.call1({x}, StaticArgs{AttrValue(cell.training())});
}

}  // namespace nn
}  // namespace spore
