"""nn.Cell subclassing, parameter discovery, built-in layers, optimizers, value_and_grad and jit,
against NumPy float64 references."""
import numpy as np
import pytest

import spore as ms
from spore import Parameter, Tensor, nn, ops

RNG = np.random.default_rng(11)


class Block(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = Parameter(Tensor(np.ones(3, np.float32)), name="scale")
        self.fc = nn.Dense(4, 3)
        self.offset = Parameter(Tensor(np.zeros(3, np.float32)), name="offset", requires_grad=False)
        self.act = nn.ReLU()

    def construct(self, x):
        return self.act(self.fc(x)) * self.scale + self.offset


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.head = nn.Dense(3, 1)

    def construct(self, x):
        return self.head(self.block(x))


def test_parameters_are_found_in_definition_order():
    net = Net()
    names = [n for n, _ in net.parameters_and_names()]
    assert names == ["block.scale", "block.offset", "block.fc.weight", "block.fc.bias", "head.weight", "head.bias"]
    assert [p.name for p in net.trainable_params()] == ["block.scale", "block.fc.weight", "block.fc.bias",
                                                        "head.weight", "head.bias"]
    assert net.block.fc.weight.shape == (3, 4)


def test_cell_needs_super_init():
    class Bad(nn.Cell):
        def __init__(self):
            self.w = Parameter(Tensor([1.0]))

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_dense_and_sequential_match_numpy():
    net = nn.SequentialCell([nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2)])
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    w1, b1, w2, b2 = [p.asnumpy().astype(np.float64) for p in net.trainable_params()]
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(net(Tensor(x)).asnumpy(), want, rtol=1e-5, atol=1e-5)
    assert [n for n, _ in net.parameters_and_names()] == ["0.weight", "0.bias", "2.weight", "2.bias"]


def test_batchnorm_set_train_and_to_float():
    bn = nn.BatchNorm2d(3)
    assert [p.name for p in bn.trainable_params()] == ["gamma", "beta"]
    assert {n for n, _ in bn.parameters_and_names()} == {"gamma", "beta", "moving_mean", "moving_variance"}
    x = RNG.normal(size=(4, 3, 2, 2)).astype(np.float32)
    net = nn.SequentialCell([nn.Conv2d(3, 3, 1, has_bias=True), bn])
    net.set_train(True)
    assert bn.training
    y = net(Tensor(x)).asnumpy()
    np.testing.assert_allclose(y.mean(axis=(0, 2, 3)), 0, atol=1e-5)  # batch statistics in training
    assert not np.allclose(bn.moving_mean.asnumpy(), 0)  # and the moving mean moved
    net.set_train(False)
    assert not bn.training
    dense = nn.Dense(4, 2).to_float(ms.float16)
    out = dense(Tensor(np.ones((1, 4), np.float32)))
    assert out.dtype == ms.float16 and dense.weight.dtype == ms.float32  # float32 masters


def sgd_momentum_ref(w, g, lr, mom, steps):
    buf = np.zeros_like(w)
    for _ in range(steps):
        buf = mom * buf + g
        w = w - lr * buf
    return w


@pytest.mark.parametrize("make,ref", [
    (lambda ps: nn.SGD(ps, learning_rate=0.1), lambda w, g: w - 0.1 * g * 3),
    (lambda ps: nn.Momentum(ps, learning_rate=0.1, momentum=0.9), lambda w, g: sgd_momentum_ref(w, g, 0.1, 0.9, 3)),
    (lambda ps: nn.AdamW(ps, learning_rate=0.01, weight_decay=0.1), None),
])
def test_optimizers_called_with_grads(make, ref):
    w0 = RNG.normal(size=(3,)).astype(np.float64)
    g = np.array([0.5, -1.0, 2.0])
    p = Parameter(Tensor(w0), name="w")
    opt = make([p])
    for _ in range(3):
        assert opt((Tensor(g),))
    if ref is None:  # AdamW, three steps, PyTorch's rule in float64
        w, m, v = w0.copy(), 0, 0
        for t in range(1, 4):
            w = w * (1 - 0.01 * 0.1)
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w = w - 0.01 * (m / (1 - 0.9 ** t)) / (np.sqrt(v / (1 - 0.999 ** t)) + 1e-8)
        want = w
    else:
        want = ref(w0, g)
    np.testing.assert_allclose(p.asnumpy(), want, rtol=1e-10, atol=1e-12)


def test_optimizer_checks():
    p = Parameter(Tensor([1.0, 2.0]), name="w")
    with pytest.raises(ValueError, match="2 gradients for 1 parameters"):
        nn.Adam([p])((Tensor([1.0, 1.0]), Tensor([1.0, 1.0])))
    with pytest.raises(ms.ShapeError):
        nn.SGD([p])((Tensor([1.0, 1.0, 1.0]),))
    with pytest.raises(TypeError, match="not a Parameter"):
        nn.Adam([Tensor([1.0])])


def test_value_and_grad_matches_analytic_gradients():
    x = RNG.normal(size=(3,))
    y = RNG.normal(size=(3,))
    w = Parameter(Tensor(np.array([0.5, -1.0, 2.0])), name="w")

    def f(a, b):
        return ops.sum(a * b * w + a * a)

    value, grads = ms.value_and_grad(f, (0, 1), [w])(Tensor(x), Tensor(y))
    (ga, gb), (gw,) = grads
    wv = w.asnumpy()
    assert float(value) == pytest.approx(np.sum(x * y * wv + x * x))
    np.testing.assert_allclose(ga.asnumpy(), y * wv + 2 * x)
    np.testing.assert_allclose(gb.asnumpy(), x * wv)
    np.testing.assert_allclose(gw.asnumpy(), x * y)
    g0 = ms.grad(f)(Tensor(x), Tensor(y))  # grad_position 0: one tensor
    np.testing.assert_allclose(g0.asnumpy(), y * wv + 2 * x)

    def with_aux(a):
        return ops.sum(a * a), a * 2

    (loss, aux), g = ms.value_and_grad(with_aux, 0, has_aux=True)(Tensor(x))
    np.testing.assert_allclose(aux.asnumpy(), 2 * x)
    np.testing.assert_allclose(g.asnumpy(), 2 * x)


def test_value_and_grad_errors():
    w = Parameter(Tensor([1.0]), name="w")
    with pytest.raises(TypeError, match="only Tensors"):
        ms.value_and_grad(lambda net, x: ops.sum(x), 0)(object(), Tensor([1.0]))
    with pytest.raises(ValueError, match="both be None"):
        ms.value_and_grad(lambda x: x, None, None)

    def raises(x):
        raise KeyError("from inside the function")

    with pytest.raises(KeyError, match="from inside"):  # the Python exception itself, through C++
        ms.value_and_grad(raises)(Tensor([1.0]))
    unused = Parameter(Tensor([2.0]), name="unused")
    with pytest.raises(ms.SporeError, match="weights"):
        ms.value_and_grad(lambda x: ops.sum(x * x), None, [unused])(Tensor([1.0]))


def test_jit_traces_once_per_signature_and_binds_parameters_by_reference():
    w = Parameter(Tensor(np.array([1.0, 2.0], np.float32)), name="w")
    calls = []

    @ms.jit
    def f(x, scale=2.0):
        calls.append(1)  # a Python side effect: runs only while tracing, as in MindSpore
        return (x + w) * scale

    x = Tensor(np.array([1.0, 1.0], np.float32))
    np.testing.assert_array_equal(f(x).asnumpy(), [4, 6])
    nn.SGD([w], learning_rate=1.0)((Tensor(np.array([1.0, 1.0], np.float32)),))  # w -> [0, 1] in place
    np.testing.assert_array_equal(f(x).asnumpy(), [2, 4])  # the compiled graph sees the update
    assert len(calls) == 1 and f.stats.hits == 1
    np.testing.assert_array_equal(f(x, 3.0).asnumpy(), [3, 6])  # a new static value: traced again
    assert len(calls) == 2

    @ms.jit
    def two(a, b):
        return a + b, a * b

    s, p = two(x, x)
    np.testing.assert_array_equal(p.asnumpy(), [1, 1])

    @ms.jit
    def branchy(a):
        return a if float(a.sum()) > 0 else -a  # reads a value while tracing

    with pytest.raises(ms.SporeError):
        branchy(x)


def test_graph_mode_python_cell_is_compiled_and_trains_the_same():
    x_values = RNG.normal(size=(8, 4)).astype(np.float32)

    def train(mode):
        ms.set_context(mode=mode)
        net = Net()
        for p, v in zip(net.trainable_params(), [np.ones(3), np.full((3, 4), 0.1), np.zeros(3),
                                                 np.full((1, 3), 0.2), np.zeros(1)]):
            p.set_data(v.astype(np.float32))
        opt = nn.Adam(net.trainable_params(), learning_rate=0.01)
        x = Tensor(x_values)
        y = Tensor(np.ones((8, 1), np.float32))
        grad_fn = ms.value_and_grad(lambda a, b: ops.mse_loss(net(a), b), None, net.trainable_params())
        losses = []
        for _ in range(5):
            loss, grads = grad_fn(x, y)
            opt(grads)
            losses.append(float(loss))
        return losses, net

    eager, _ = train(ms.PYNATIVE_MODE)
    graph, net = train(ms.GRAPH_MODE)
    np.testing.assert_allclose(graph, eager, rtol=1e-5)
    assert net._graph_fn is not None and net._graph_fn.hits >= 1


def test_with_loss_and_train_one_step_cells():
    x = Tensor(RNG.normal(size=(16, 4)).astype(np.float32))
    y = Tensor(np.ones((16, 1), np.float32))
    net = nn.Dense(4, 1)
    step = nn.TrainOneStepCell(nn.WithLossCell(net, nn.MSELoss()), nn.SGD(net.trainable_params(), 0.1))
    losses = [float(step(x, y)) for _ in range(20)]
    assert losses[-1] < losses[0] / 4
