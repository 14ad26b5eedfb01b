"""mindspore.ops under Spore: every registry op under its MindSpore name (C++: ops_bindings.cc)."""
from .. import _spore as _s

_native = _s.ops
for _name in dir(_native):
    if not _name.startswith("_"):
        globals()[_name] = getattr(_native, _name)
del _name


def dense(input, weight, bias=None):  # noqa: A002  (MindSpore's argument name)
    """x @ weight^T + bias (mindspore.ops.dense)."""
    y = _native.matmul(input, weight.T)
    return y if bias is None else y + bias


from .collectives import ReduceOp, AllReduce, AllGather, Broadcast  # noqa: E402,F401
