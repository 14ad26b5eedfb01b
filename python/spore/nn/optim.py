"""Optimizers in MindSpore's spelling, called as optimizer(grads) with the gradients in the order
of the parameters they were built with (C++: spore::optim; updates are in place)."""
from .. import _spore
from .._spore import Parameter, Tensor, UnsupportedError


def _params(params, who):
    params = list(params)
    if params and isinstance(params[0], dict):
        raise UnsupportedError(f"{who}: parameter groups (dicts) are not supported; pass net.trainable_params()")
    for i, p in enumerate(params):
        if not isinstance(p, Parameter):
            raise TypeError(f"{who}: item {i} of params is a {type(p).__name__}, not a Parameter; "
                            f"pass net.trainable_params()")
    if not params:
        raise ValueError(f"{who}: the parameter list is empty (did the network register any Parameters?)")
    return params


def _lr(learning_rate, who):
    if isinstance(learning_rate, Tensor):
        learning_rate = float(learning_rate)
    if not isinstance(learning_rate, (int, float)) or learning_rate < 0:
        raise TypeError(f"{who}: learning_rate must be a non-negative number, got {learning_rate!r}")
    return float(learning_rate)


class Optimizer:
    def __init__(self, learning_rate, parameters, weight_decay=0.0, loss_scale=1.0):
        self.parameters = parameters
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.loss_scale = float(loss_scale)
        self._native = None

    def __call__(self, gradients):
        grads = list(gradients)
        if len(grads) != len(self.parameters):
            raise ValueError(f"{type(self).__name__}: {len(grads)} gradients for {len(self.parameters)} parameters; "
                             f"differentiate with weights=the same trainable_params()")
        if self.loss_scale != 1.0:
            grads = [g / self.loss_scale for g in grads]
        return self._native(grads)

    construct = __call__

    @property
    def global_step(self):
        return self._native.steps_taken

    def get_lr(self):
        return self._native.current_lr


class Adam(Optimizer):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, use_locking=False,
                 use_nesterov=False, weight_decay=0.0, loss_scale=1.0, use_amsgrad=False):
        ps = _params(params, "Adam")
        if use_nesterov or use_amsgrad:
            raise UnsupportedError("Adam: use_nesterov and use_amsgrad are not supported")
        lr = _lr(learning_rate, "Adam")
        super().__init__(lr, ps, weight_decay, loss_scale)
        self._native = _spore._Adam(ps, lr, beta1, beta2, eps, weight_decay)


class AdamWeightDecay(Optimizer):
    """Decoupled weight decay (PyTorch's AdamW; MindSpore's AdamWeightDecay, eps 1e-6)."""

    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-6, weight_decay=0.0):
        ps = _params(params, type(self).__name__)
        lr = _lr(learning_rate, type(self).__name__)
        super().__init__(lr, ps, weight_decay)
        self._native = _spore._AdamW(ps, lr, beta1, beta2, eps, weight_decay)


class AdamW(AdamWeightDecay):
    def __init__(self, params, learning_rate=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=1e-2):
        super().__init__(params, learning_rate, beta1, beta2, eps, weight_decay)


class SGD(Optimizer):
    def __init__(self, params, learning_rate=0.1, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False,
                 loss_scale=1.0):
        ps = _params(params, "SGD")
        lr = _lr(learning_rate, "SGD")
        super().__init__(lr, ps, weight_decay, loss_scale)
        self._native = _spore._SGD(ps, lr, momentum, weight_decay, nesterov, dampening)


class Momentum(Optimizer):
    def __init__(self, params, learning_rate, momentum, weight_decay=0.0, loss_scale=1.0, use_nesterov=False):
        ps = _params(params, "Momentum")
        lr = _lr(learning_rate, "Momentum")
        super().__init__(lr, ps, weight_decay, loss_scale)
        self._native = _spore._SGD(ps, lr, momentum, weight_decay, use_nesterov, 0.0)
