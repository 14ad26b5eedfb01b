"""Tensor methods written in Python (printing); the rest is C++ (tensor_bindings.cc)."""
import numpy as np

from ._spore import Tensor, Parameter


def _repr(self):
    return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, value=\n{np.array2string(self.asnumpy())})"


def _str(self):
    return str(self.asnumpy())


def _param_repr(self):
    return f"Parameter (name={self.name}, shape={list(self.shape)}, dtype={self.dtype}, " \
           f"requires_grad={self.requires_grad})"


Tensor.__repr__ = _repr
Tensor.__str__ = _str
Tensor.__iter__ = lambda self: (self[i] for i in range(len(self)))
Parameter.__repr__ = _param_repr
Parameter.__str__ = _param_repr
