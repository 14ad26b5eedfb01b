"""Built-in layers: Python cells over Spore's C++ cells (MindSpore's argument names and defaults)."""
import numpy as np

from .. import _spore
from .. import ops
from ..context import next_seed
from .._spore import Tensor, UnsupportedError, dtype as _dt
from .cell import Cell


class _NativeCell(Cell):
    """A cell whose computation and parameters are one C++ cell's."""

    def __init__(self, native):
        super().__init__()
        object.__setattr__(self, "_native", native)
        native.set_train(False)  # MindSpore's cells start with training False, as here

    def __getattr__(self, name):
        native = self.__dict__.get("_native")
        if native is not None:
            for n, p in native.named_parameters():
                if n == name:
                    return p
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def construct(self, x):
        return self._native(x)


def _pair(v):
    return [v, v] if isinstance(v, int) else list(v)


def _apply_init(param, init, what):
    """weight_init / bias_init: None keeps Spore's default (PyTorch's, MindSpore 2.x's); a Tensor or
    array sets the values; 'zeros', 'ones', 'normal' (sigma 0.01) as MindSpore's initializers."""
    if init is None:
        return
    if isinstance(init, str):
        name = init.lower()
        if name in ("zeros", "zero"):
            param.set_data(np.zeros(param.shape, np.float64))
        elif name in ("ones", "one"):
            param.set_data(np.ones(param.shape, np.float64))
        elif name == "normal":
            param.set_data(ops.normal(list(param.shape), 0.0, 0.01, next_seed(), _dt.float64))
        elif name in ("he_uniform", "heuniform", "uniform"):
            return  # Spore's default is he_uniform(a = sqrt(5))
        else:
            raise UnsupportedError(f"{what}: initializer {init!r} is not supported; use None, 'zeros', 'ones', "
                                   f"'normal', or pass a Tensor/array of the values")
    else:
        param.set_data(init)


class Dense(_NativeCell):
    def __init__(self, in_channels, out_channels, weight_init=None, bias_init=None, has_bias=True,
                 activation=None, dtype=_dt.float32):
        if isinstance(activation, Cell):
            raise UnsupportedError("Dense: give activation by name ('relu', 'gelu', ...)")
        super().__init__(_spore._Dense(in_channels, out_channels, has_bias, activation or "", next_seed(), dtype))
        self.in_channels, self.out_channels, self.has_bias = in_channels, out_channels, has_bias
        _apply_init(self.weight, weight_init, "Dense weight_init")
        if has_bias:
            _apply_init(self.bias, bias_init, "Dense bias_init")


class Conv2d(_NativeCell):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, pad_mode="same", padding=0,
                 dilation=1, group=1, has_bias=False, weight_init=None, bias_init=None, data_format="NCHW",
                 dtype=_dt.float32):
        if data_format != "NCHW":
            raise UnsupportedError("Conv2d: only data_format 'NCHW' is supported")
        pads = [padding] if isinstance(padding, int) else list(padding)
        super().__init__(_spore._Conv2d(in_channels, out_channels, _pair(kernel_size), _pair(stride), pad_mode, pads,
                                        _pair(dilation), group, has_bias, next_seed(), dtype))
        _apply_init(self.weight, weight_init, "Conv2d weight_init")
        if has_bias:
            _apply_init(self.bias, bias_init, "Conv2d bias_init")


class _BatchNorm(_NativeCell):
    def __init__(self, native_type, num_features, eps, momentum, affine, gamma_init, beta_init,
                 moving_mean_init, moving_var_init, use_batch_statistics, dtype):
        if use_batch_statistics is not None:
            raise UnsupportedError("BatchNorm: use_batch_statistics is decided by set_train() here")
        super().__init__(native_type(num_features, eps, momentum, affine, dtype))
        for name, init in (("gamma", gamma_init), ("beta", beta_init), ("moving_mean", moving_mean_init),
                           ("moving_variance", moving_var_init)):
            if init is not None:
                _apply_init(getattr(self, name), init, f"BatchNorm {name}_init")


class BatchNorm1d(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init=None, beta_init=None,
                 moving_mean_init=None, moving_var_init=None, use_batch_statistics=None, dtype=_dt.float32):
        super().__init__(_spore._BatchNorm1d, num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, dtype)


class BatchNorm2d(_BatchNorm):
    def __init__(self, num_features, eps=1e-5, momentum=0.9, affine=True, gamma_init=None, beta_init=None,
                 moving_mean_init=None, moving_var_init=None, use_batch_statistics=None, data_format="NCHW",
                 dtype=_dt.float32):
        if data_format != "NCHW":
            raise UnsupportedError("BatchNorm2d: only data_format 'NCHW' is supported")
        super().__init__(_spore._BatchNorm2d, num_features, eps, momentum, affine, gamma_init, beta_init,
                         moving_mean_init, moving_var_init, use_batch_statistics, dtype)


class LayerNorm(_NativeCell):
    def __init__(self, normalized_shape, begin_norm_axis=-1, begin_params_axis=-1, gamma_init="ones",
                 beta_init="zeros", epsilon=1e-7, dtype=_dt.float32):
        if begin_norm_axis != -len(normalized_shape) and begin_norm_axis != -1:
            raise UnsupportedError("LayerNorm: normalisation starts at the first axis of normalized_shape")
        super().__init__(_spore._LayerNorm(list(normalized_shape), epsilon, True, dtype))


class Embedding(_NativeCell):
    def __init__(self, vocab_size, embedding_size, use_one_hot=False, embedding_table="normal",
                 dtype=_dt.int32, padding_idx=None):
        if use_one_hot or padding_idx is not None:
            raise UnsupportedError("Embedding: use_one_hot and padding_idx are not supported")
        super().__init__(_spore._Embedding(vocab_size, embedding_size, next_seed(), _dt.float32))
        if not (isinstance(embedding_table, str) and embedding_table == "normal"):
            _apply_init(self.embedding_table, embedding_table, "Embedding embedding_table")


class Dropout(_NativeCell):
    def __init__(self, keep_prob=None, p=None, dtype=_dt.float32):
        if p is None:
            p = 0.5 if keep_prob is None else 1.0 - keep_prob
        super().__init__(_spore._Dropout(p, next_seed()))


class MaxPool2d(_NativeCell):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, dilation=1, return_indices=False,
                 ceil_mode=False, data_format="NCHW"):
        if pad_mode.lower() not in ("valid", "pad") or dilation != 1 or return_indices:
            raise UnsupportedError("MaxPool2d: pad_mode 'valid'/'pad', no dilation, no indices")
        super().__init__(_spore._MaxPool2d(_pair(kernel_size), _pair(stride), _pair(padding), ceil_mode))


class AvgPool2d(_NativeCell):
    def __init__(self, kernel_size=1, stride=1, pad_mode="valid", padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None, data_format="NCHW"):
        if pad_mode.lower() not in ("valid", "pad") or divisor_override is not None:
            raise UnsupportedError("AvgPool2d: pad_mode 'valid'/'pad' and no divisor_override")
        if padding and count_include_pad:
            raise UnsupportedError("AvgPool2d: padded cells are never counted here; pass count_include_pad=False")
        super().__init__(_spore._AvgPool2d(_pair(kernel_size), _pair(stride), _pair(padding), ceil_mode))


class AdaptiveAvgPool2d(_NativeCell):
    def __init__(self, output_size):
        super().__init__(_spore._AdaptiveAvgPool2d(_pair(output_size)))


class Flatten(_NativeCell):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_spore._flatten_cell(start_dim, end_dim))


def _activation(name):
    class _Act(_NativeCell):
        def __init__(self):
            super().__init__(_spore._activation(name))
    return _Act


ReLU = type("ReLU", (_activation("relu"),), {})
ReLU6 = type("ReLU6", (_activation("relu6"),), {})
SiLU = type("SiLU", (_activation("silu"),), {})
Sigmoid = type("Sigmoid", (_activation("sigmoid"),), {})
Tanh = type("Tanh", (_activation("tanh"),), {})


class GELU(_NativeCell):
    def __init__(self, approximate=True):  # MindSpore's default: the tanh approximation
        super().__init__(_spore._gelu_cell(bool(approximate)))


class Softmax(_NativeCell):
    def __init__(self, axis=-1):
        super().__init__(_spore._softmax_cell(axis))


class LogSoftmax(Cell):
    def __init__(self, axis=-1):
        super().__init__()
        self.axis = axis

    def construct(self, x):
        return ops.log_softmax(x, self.axis)


# ---- losses (MindSpore's LossBase cells): called with (logits, labels) ----
class LossBase(Cell):
    def __init__(self, reduction="mean"):
        super().__init__()
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"{type(self).__name__}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.reduction = reduction


class MSELoss(LossBase):
    def construct(self, logits, labels):
        return ops.mse_loss(logits, labels, self.reduction)


class L1Loss(LossBase):
    def construct(self, logits, labels):
        return ops.l1_loss(logits, labels, self.reduction)


class CrossEntropyLoss(LossBase):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__(reduction)
        if weight is not None:
            raise UnsupportedError("CrossEntropyLoss: class weights are not supported")
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def construct(self, logits, labels):
        return ops.cross_entropy(logits, labels, None, self.ignore_index, self.reduction, self.label_smoothing)


class NLLLoss(LossBase):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(reduction)
        if weight is not None:
            raise UnsupportedError("NLLLoss: class weights are not supported")
        self.ignore_index = ignore_index

    def construct(self, logits, labels):
        return ops.nll_loss(logits, labels, None, self.ignore_index, self.reduction)


class BCEWithLogitsLoss(LossBase):
    def construct(self, logits, labels):
        return ops.binary_cross_entropy_with_logits(logits, labels, reduction=self.reduction)


__all__ = ["Dense", "Conv2d", "BatchNorm1d", "BatchNorm2d", "LayerNorm", "Embedding", "Dropout", "MaxPool2d",
           "AvgPool2d", "AdaptiveAvgPool2d", "Flatten", "ReLU", "ReLU6", "SiLU", "Sigmoid", "Tanh", "GELU",
           "Softmax", "LogSoftmax", "LossBase", "MSELoss", "L1Loss", "CrossEntropyLoss", "NLLLoss",
           "BCEWithLogitsLoss", "Tensor"]
