"""spore.ops under MindSpore's names against NumPy (float64) references."""
import numpy as np
import pytest

import spore as ms
from spore import Tensor, ops

RNG = np.random.default_rng(3)
X = RNG.normal(size=(2, 3, 4)).astype(np.float32)
Y = RNG.normal(size=(2, 3, 4)).astype(np.float32)
P = np.abs(X) + 0.5


def softmax(a, axis):
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


CASES = [
    ("add", lambda: ops.add(Tensor(X), Tensor(Y)), lambda: X + Y),
    ("sub scalar", lambda: ops.sub(Tensor(X), 1.5), lambda: X - 1.5),
    ("mul", lambda: ops.mul(Tensor(X), Tensor(Y)), lambda: X * Y),
    ("div", lambda: ops.div(Tensor(X), Tensor(P)), lambda: X / P),
    ("pow", lambda: ops.pow(Tensor(P), 1.5), lambda: P ** 1.5),
    ("maximum", lambda: ops.maximum(Tensor(X), Tensor(Y)), lambda: np.maximum(X, Y)),
    ("exp", lambda: ops.exp(Tensor(X)), lambda: np.exp(X)),
    ("log", lambda: ops.log(Tensor(P)), lambda: np.log(P)),
    ("sqrt", lambda: ops.sqrt(Tensor(P)), lambda: np.sqrt(P)),
    ("rsqrt", lambda: ops.rsqrt(Tensor(P)), lambda: 1 / np.sqrt(P)),
    ("tanh", lambda: ops.tanh(Tensor(X)), lambda: np.tanh(X)),
    ("sigmoid", lambda: ops.sigmoid(Tensor(X)), lambda: 1 / (1 + np.exp(-X))),
    ("relu", lambda: ops.relu(Tensor(X)), lambda: np.maximum(X, 0)),
    ("silu", lambda: ops.silu(Tensor(X)), lambda: X / (1 + np.exp(-X))),
    ("where", lambda: ops.where(Tensor(X) > 0, Tensor(X), 0.0), lambda: np.where(X > 0, X, 0)),
    ("sum", lambda: ops.sum(Tensor(X), 1), lambda: X.sum(1)),
    ("sum keepdim", lambda: ops.sum(Tensor(X), (0, 2), True), lambda: X.sum((0, 2), keepdims=True)),
    ("mean", lambda: ops.mean(Tensor(X), -1), lambda: X.mean(-1)),
    ("amax", lambda: ops.amax(Tensor(X), 2), lambda: X.max(2)),
    ("max values", lambda: ops.max(Tensor(X), 1)[0], lambda: X.max(1)),
    ("max indices", lambda: ops.max(Tensor(X), 1)[1], lambda: X.argmax(1)),
    ("argmax", lambda: ops.argmax(Tensor(X), 2), lambda: X.argmax(2)),
    ("var", lambda: ops.var(Tensor(X), 2), lambda: X.var(2)),
    ("matmul", lambda: ops.matmul(Tensor(X), Tensor(Y).swapaxes(1, 2)), lambda: X @ Y.transpose(0, 2, 1)),
    ("reshape", lambda: ops.reshape(Tensor(X), (6, -1)), lambda: X.reshape(6, -1)),
    ("transpose", lambda: ops.transpose(Tensor(X), (2, 0, 1)), lambda: X.transpose(2, 0, 1)),
    ("flatten", lambda: ops.flatten(Tensor(X)), lambda: X.reshape(2, -1)),
    ("expand_dims", lambda: ops.expand_dims(Tensor(X), 1), lambda: X[:, None]),
    ("broadcast_to", lambda: ops.broadcast_to(Tensor(X[:1]), (3, 3, 4)), lambda: np.broadcast_to(X[:1], (3, 3, 4))),
    ("concat", lambda: ops.concat([Tensor(X), Tensor(Y)], 1), lambda: np.concatenate([X, Y], 1)),
    ("stack", lambda: ops.stack([Tensor(X), Tensor(Y)], 0), lambda: np.stack([X, Y])),
    ("split", lambda: ops.split(Tensor(X), 2, 2)[1], lambda: X[:, :, 2:]),
    ("slice", lambda: ops.slice(Tensor(X), (0, 1, 1), (2, 2, -1)), lambda: X[0:2, 1:3, 1:]),
    ("gather", lambda: ops.gather(Tensor(X), Tensor([2, 0], ms.int64), 1), lambda: X[:, [2, 0]]),
    ("gather_elements", lambda: ops.gather_elements(Tensor(X), 2, Tensor(np.zeros((2, 3, 1), np.int64))),
     lambda: X[:, :, :1]),
    ("softmax", lambda: ops.softmax(Tensor(X), -1), lambda: softmax(X.astype(np.float64), -1)),
    ("log_softmax", lambda: ops.log_softmax(Tensor(X), 1), lambda: np.log(softmax(X.astype(np.float64), 1))),
    ("mse_loss", lambda: ops.mse_loss(Tensor(X), Tensor(Y)), lambda: np.mean((X - Y) ** 2)),
    ("l1_loss sum", lambda: ops.l1_loss(Tensor(X), Tensor(Y), "sum"), lambda: np.abs(X - Y).sum()),
    ("slice_scatter", lambda: ops.slice_scatter(Tensor(X), Tensor(np.zeros((2, 3, 2), np.float32)), 2, 1, 3),
     lambda: np.concatenate([X[:, :, :1], np.zeros((2, 3, 2)), X[:, :, 3:]], 2)),
    ("rms_norm", lambda: ops.rms_norm(Tensor(X), Tensor(P[0, 0]), 1e-6),
     lambda: X / np.sqrt((X.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * P[0, 0]),
    ("zeros", lambda: ops.zeros((2, 3), ms.int32), lambda: np.zeros((2, 3))),
    ("full", lambda: ops.full((2,), 1.5), lambda: np.full(2, 1.5)),
    ("arange", lambda: ops.arange(1, 7, 2), lambda: np.arange(1, 7, 2)),
    ("ones_like", lambda: ops.ones_like(Tensor(X)), lambda: np.ones_like(X)),
]


@pytest.mark.parametrize("name,ours,ref", CASES, ids=[c[0] for c in CASES])
def test_op_matches_numpy(name, ours, ref):
    got = ours()
    want = np.asarray(ref(), np.float64)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.asnumpy().astype(np.float64), want, rtol=2e-5, atol=2e-6)


def test_cross_entropy_matches_float64():
    logits = RNG.normal(size=(5, 4)).astype(np.float32)
    labels = np.array([0, 3, 1, 1, 2])
    lp = np.log(softmax(logits.astype(np.float64), 1))
    want = -lp[np.arange(5), labels].mean()
    got = ops.cross_entropy(Tensor(logits), Tensor(labels))
    assert abs(float(got) - want) < 1e-6


def test_conv2d_and_pooling_match_numpy():
    x = RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)
    w = RNG.normal(size=(3, 2, 3, 3)).astype(np.float32)
    want = np.zeros((1, 3, 3, 3))
    for o in range(3):
        for i in range(3):
            for j in range(3):
                want[0, o, i, j] = np.sum(x[0, :, i:i + 3, j:j + 3] * w[o])
    got = ops.conv2d(Tensor(x), Tensor(w))
    np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-4)
    pooled = ops.max_pool2d(Tensor(x[:, :, :4, :4]), 2)
    np.testing.assert_array_equal(pooled.asnumpy(), x[:, :, :4, :4].reshape(1, 2, 2, 2, 2, 2).max((3, 5)))


def test_every_mindspore_name_is_there():
    names = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "equal", "not_equal", "less", "less_equal",
             "greater", "greater_equal", "logical_and", "logical_or", "logical_not", "neg", "abs", "exp", "log",
             "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid", "erf", "relu", "relu6", "gelu", "silu", "where",
             "cast", "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "var", "matmul", "reshape",
             "flatten", "transpose", "permute", "squeeze", "unsqueeze", "expand_dims", "broadcast_to", "concat",
             "stack", "split", "chunk", "slice", "gather", "gather_elements", "index_select", "embedding",
             "tensor_scatter_elements", "conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "softmax",
             "log_softmax", "zeros", "ones", "full", "fill", "zeros_like", "ones_like", "arange", "uniform",
             "normal", "slice_scatter", "assign", "rms_norm", "mse_loss", "l1_loss", "cross_entropy", "nll_loss", "binary_cross_entropy_with_logits"]
    missing = [n for n in names if not hasattr(ops, n)]
    assert not missing


def test_assign_writes_in_place():
    v = Tensor(np.zeros(3, np.float32))
    out = ops.assign(v, Tensor(np.array([1, 2, 3], np.float32)))
    assert out.shares_memory_with(v) and v.asnumpy().tolist() == [1, 2, 3]


def test_op_errors_carry_spore_messages():
    with pytest.raises(ms.ShapeError, match="broadcast"):
        ops.add(Tensor(np.zeros((2, 3))), Tensor(np.zeros((4,))))
    with pytest.raises(ms.SporeError):
        ops.softmax(Tensor(X), 5)
    with pytest.raises(ValueError, match="approximate"):
        ops.gelu(Tensor(X), "bogus")
