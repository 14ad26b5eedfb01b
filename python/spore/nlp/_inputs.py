"""The shapes transformers users pass (a Tensor, a NumPy array, a list of ids or of lists), as
plain rows of Python ints, and rows back as a Tensor."""
import numpy as np

from .._spore import Tensor


def rows(value, what):
    """[[int, ...], ...] from a 1-D or 2-D Tensor / array / list (a 1-D input is one row)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        value = value.asnumpy()
    if isinstance(value, np.ndarray):
        if value.ndim not in (1, 2) or not (np.issubdtype(value.dtype, np.integer) or value.dtype == np.bool_):
            raise ValueError(f"{what}: expected a 1-D or 2-D integer tensor, got shape {value.shape} of {value.dtype}")
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"{what}: expected a Tensor, a NumPy array or a list of ints, got {type(value).__name__}")
    if all(isinstance(v, (int, np.integer)) for v in value):
        return [[int(v) for v in value]]
    out = []
    for i, r in enumerate(value):
        if isinstance(r, Tensor):
            r = r.asnumpy().tolist()
        if not isinstance(r, (list, tuple, np.ndarray)) or not all(isinstance(v, (int, np.integer)) for v in r):
            raise TypeError(f"{what}: row {i} is not a list of ints")
        out.append([int(v) for v in r])
    return out


def check_like(a, b, what_a, what_b):
    if a is None or b is None:
        return
    if len(a) != len(b) or any(len(x) != len(y) for x, y in zip(a, b)):
        raise ValueError(f"{what_a} and {what_b} must have the same shape")


def span(mask_row, i):
    """(start, end) of the one run of 1s in an attention-mask row (left or right padding)."""
    ones = [j for j, m in enumerate(mask_row) if m]
    if not ones:
        raise ValueError(f"attention_mask: row {i} masks every token")
    start, end = ones[0], ones[-1] + 1
    if len(ones) != end - start:
        raise ValueError(f"attention_mask: row {i} has padding inside the sequence; pad on the left or the right only")
    return start, end


def tensor(rows_, dtype=np.int64):
    return Tensor(np.asarray(rows_, dtype=dtype))
