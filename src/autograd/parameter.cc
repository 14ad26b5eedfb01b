#include "spore/parameter.h"

namespace spore {

Parameter::Parameter(Tensor value, std::string name, bool requires_grad)
    : state_(std::make_shared<State>(State{std::move(value), std::move(name), requires_grad})) {
  if (!state_->value.defined()) throw Error(ErrorCode::kValue, "Parameter '" + state_->name + "': undefined tensor");
}

const Parameter::State& Parameter::state() const {
  if (!state_) throw Error(ErrorCode::kValue, "use of an empty Parameter handle");
  return *state_;
}

const Tensor& Parameter::value() const { return state().value; }
const std::string& Parameter::name() const { return state().name; }
bool Parameter::requires_grad() const { return state().requires_grad; }
void Parameter::set_name(std::string name) {
  state();
  state_->name = std::move(name);
}
void Parameter::set_requires_grad(bool on) {
  state();
  state_->requires_grad = on;
}

void Parameter::set_value(Tensor value) {
  const State& s = state();
  if (value.shape() != s.value.shape())
    throw Error(ErrorCode::kShape, "Parameter '" + s.name + "': new value has shape " + value.shape().str() +
                                       ", the parameter has " + s.value.shape().str());
  if (value.dtype() != s.value.dtype())
    throw Error(ErrorCode::kDType, "Parameter '" + s.name + "': new value is " + dtype_name(value.dtype()) +
                                       ", the parameter is " + dtype_name(s.value.dtype()));
  state_->value = std::move(value);
}

}  // namespace spore
