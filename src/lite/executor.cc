// Lite's executor (NOTE [Lite runtime]).
#include "lite/executor.h"

#include <string>

#include "spore/error.h"

namespace spore::lite {

Executor::Executor(ir::Graph graph, Device device, std::string label)
    : graph_(std::move(graph)), device_(device), label_(std::move(label)) {
  weights_.resize(graph_.values.size());
  for (size_t i = 0; i < graph_.values.size(); ++i) {
    const ir::Value& v = graph_.values[i];
    if (v.data.defined()) weights_[i] = device == Device::cpu() ? v.data : v.data.to(device);
  }
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    if (!graph_.nodes[n].subgraphs.empty())
      throw Error(ErrorCode::kUnsupported, label_ + ": node " + std::to_string(n) + " (" + graph_.nodes[n].def->name +
                                               ") has subgraphs (cond / while_loop), which Lite does not run yet; "
                                               "run the model in the framework");
}

void Executor::plan(const std::vector<Shape>& input_shapes) {
  planned_ = false;
  steps_.clear();
  std::vector<Tensor> values = weights_;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) {
    const ir::Value& v = graph_.values[graph_.inputs[i]];
    values[graph_.inputs[i]] = Tensor::empty(input_shapes[i], v.dtype, device_);
  }
  // Last reader of each value: intermediates are freed after it (graph outputs never are).
  std::vector<int> last(graph_.values.size(), -1);
  for (size_t n = 0; n < graph_.nodes.size(); ++n)
    for (uint32_t id : graph_.nodes[n].inputs) last[id] = (int)n;
  for (uint32_t id : graph_.outputs) last[id] = (int)graph_.nodes.size();
  std::vector<Tensor> ins;
  for (size_t n = 0; n < graph_.nodes.size(); ++n) {
    const ir::Node& node = graph_.nodes[n];
    Step step;
    step.inputs = node.inputs;
    step.outputs = node.outputs;
    ins.clear();
    for (uint32_t id : node.inputs) ins.push_back(values[id]);
    step.op = std::make_unique<PlannedOp>(node.def->id, ins, node.attrs);
    const Inference& inf = step.op->plan().inference;
    if (inf.num_outputs != (int)node.outputs.size())
      throw Error(ErrorCode::kFormat, label_ + ": node " + std::to_string(n) + " (" + node.def->name + ") names " +
                                          std::to_string(node.outputs.size()) + " outputs; the op makes " +
                                          std::to_string(inf.num_outputs));
    for (int o = 0; o < inf.num_outputs; ++o) {
      const ir::Value& declared = graph_.values[node.outputs[o]];
      const TensorMeta& got = inf.outputs[o];
      bool same = got.dtype == declared.dtype && got.shape.ndim() == (int)declared.dims.size();
      for (int d = 0; same && d < got.shape.ndim(); ++d)
        same = declared.dims[d].symbolic() || declared.dims[d].extent == got.shape[d];
      if (!same)
        throw Error(ErrorCode::kFormat, label_ + ": node " + std::to_string(n) + " (" + node.def->name +
                                            ") computes " + dtype_name(got.dtype) + got.shape.str() +
                                            " where the file declares value " + std::to_string(node.outputs[o]) +
                                            " as " + dtype_name(declared.dtype) + " with " +
                                            std::to_string(declared.dims.size()) + " dimensions");
      values[node.outputs[o]] = Tensor::empty(got.shape, got.dtype, device_);
    }
    for (uint32_t id : node.inputs)
      if (last[id] == (int)n && graph_.values[id].kind == ir::ValueKind::kNode) {
        step.release.push_back(id);
        values[id] = Tensor();
      }
    steps_.push_back(std::move(step));
  }
  planned_shapes_ = input_shapes;
  planned_ = true;
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) const {
  std::vector<Tensor> values = weights_;
  for (size_t i = 0; i < graph_.inputs.size(); ++i) values[graph_.inputs[i]] = inputs[i];
  std::vector<Tensor> ins;
  for (const Step& step : steps_) {
    ins.clear();
    for (uint32_t id : step.inputs) ins.push_back(values[id]);
    TensorList outs = step.op->run(ins);
    for (size_t o = 0; o < step.outputs.size(); ++o) values[step.outputs[o]] = std::move(outs[(int)o]);
    for (uint32_t id : step.release) values[id] = Tensor();
  }
  std::vector<Tensor> out;
  for (uint32_t id : graph_.outputs) out.push_back(values[id]);
  return out;
}

}  // namespace spore::lite
