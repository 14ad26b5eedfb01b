// Optimizer update ops: fused, in place on their inputs, no outputs.
//
// NOTE [In-place update ops]
// Optimizers update parameters and their state where they live, so a Parameter keeps its tensor
// (and the handles that autograd and the network hold stay valid) and a step costs one pass over
// memory per parameter instead of a dozen eager ops. They are registry ops like any other, so
// every backend implements them through the same table; they have no outputs, declare the inputs
// they write and that they are not differentiable (NOTE [Declared effects]), and optimizers run
// them under NoGradGuard.
#include "op_families.h"

namespace spore::ops {

namespace {

void check_state(const InferArgs& a, int first_state) {
  const Tensor& p = a.inputs[0];
  if (!is_floating(p.dtype()))
    op_error(a.def, ErrorCode::kDType, std::string("parameters must be floating point, got ") + dtype_name(p.dtype()));
  DType state = p.dtype() == DType::kFloat64 ? DType::kFloat64 : DType::kFloat32;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Tensor& t = a.inputs[i];
    if (t.shape() != p.shape())
      op_error(a.def, ErrorCode::kShape, "input " + std::to_string(i) + " has shape " + t.shape().str() +
                                             ", the parameter has " + p.shape().str());
    if (!t.is_contiguous())
      op_error(a.def, ErrorCode::kValue, "input " + std::to_string(i) + " must be contiguous (updates are in place)");
    DType want = (int)i < first_state ? p.dtype() : state;
    if (t.dtype() != want)
      op_error(a.def, ErrorCode::kDType, "input " + std::to_string(i) + " is " + dtype_name(t.dtype()) +
                                             ", expected " + dtype_name(want) + " (inputs: " +
                                             describe_inputs(a.inputs) + ")");
  }
}

}  // namespace

void define_optim_ops(OpTable& table) {
  // sgd_update(param, grad, momentum_buffer): PyTorch's SGD (MindSpore's Momentum when
  // dampening is 0), weight decay as L2 added to the gradient.
  OpDef& sgd = define(table, OpId::k_sgd_update, 3,
                      {{"lr", AttrKind::kFloat}, {"momentum", AttrKind::kFloat},
                       {"dampening", AttrKind::kFloat}, {"weight_decay", AttrKind::kFloat},
                       {"nesterov", AttrKind::kBool}, {"first_step", AttrKind::kBool}});
  sgd.facts = not_elementwise();
  sgd.infer = [](const InferArgs& a, Inference& out) {
    check_state(a, 2);
    out.num_outputs = 0;
    out.compute = a.inputs[0].dtype();
  };
  sgd.differentiable = false;
  sgd.writes_mask = 0b101;  // param, momentum_buffer (NOTE [Declared effects])
  // adam_update(param, grad, exp_avg, exp_avg_sq): Adam, or AdamW when decoupled.
  OpDef& adam = define(table, OpId::k_adam_update, 4,
                       {{"lr", AttrKind::kFloat}, {"beta1", AttrKind::kFloat}, {"beta2", AttrKind::kFloat},
                        {"eps", AttrKind::kFloat}, {"weight_decay", AttrKind::kFloat}, {"step", AttrKind::kInt},
                        {"decoupled", AttrKind::kBool}});
  adam.facts = not_elementwise();
  adam.infer = [](const InferArgs& a, Inference& out) {
    check_state(a, 2);
    if (a.attrs.i(5) < 1) op_error(a.def, ErrorCode::kValue, "step counts from 1");
    out.num_outputs = 0;
    out.compute = a.inputs[0].dtype();
  };
  adam.differentiable = false;
  adam.writes_mask = 0b1101;  // param, exp_avg, exp_avg_sq
}

}  // namespace spore::ops
