#!/usr/bin/env python3
"""Python-level benchmarks of the spore module against PyTorch and (where installed) MindSpore,
in one run so the ratios compare like with like (issue 14):

  1. eager dispatch of `a + b` on 2x2 float32 tensors (ns per op, best of 5 repeats);
  2. the chapter's 200-step Adam regression (Dense(4, 1), 64 rows, float32, full batch, lr 0.05)
     written in Python: spore PyNative and GRAPH_MODE, PyTorch eager, MindSpore PyNative and
     @jit where installed (ms per 200 steps, best of 3).

Run with an interpreter that has torch (the peers venv) and the built modules on PYTHONPATH:
  PYTHONPATH=build/release/python /work/main/.venv-peers/bin/python bench/python_bench.py
Results go to stdout; bench/README.md (section "Python modules") keeps the figures of the last run."""
import importlib.util
import os
import time
import timeit

import numpy as np

os.environ.setdefault("OMP_NUM_THREADS", "1")


def best_ns(stmt, setup_globals, number=100_000, repeat=5):
    t = min(timeit.repeat(stmt, globals=setup_globals, number=number, repeat=repeat))
    return t / number * 1e9


def data():
    rng = np.random.default_rng(2024)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = (x.astype(np.float64) @ np.array([0.5, -0.75, 0.25, 1.0]) + 0.25).astype(np.float32).reshape(64, 1)
    return x, y


W0 = np.array([[0.1, -0.2, 0.3, 0.05]], np.float32)


def spore_regression(graph):
    import spore as ms
    from spore import Tensor, nn, ops
    ms.set_context(mode=ms.GRAPH_MODE if graph else ms.PYNATIVE_MODE)

    class Linear(nn.Cell):
        def __init__(self):
            super().__init__()
            self.weight = ms.Parameter(Tensor(W0.T.copy()), name="weight")
            self.bias = ms.Parameter(Tensor(np.zeros(1, np.float32)), name="bias")

        def construct(self, x):
            return ops.matmul(x, self.weight) + self.bias

    x, y = data()
    net = Linear()
    opt = nn.Adam(net.trainable_params(), learning_rate=0.05)
    grad_fn = ms.value_and_grad(lambda a, b: ops.mse_loss(net(a), b), None, net.trainable_params())
    xt, yt = Tensor(x), Tensor(y)
    start = time.perf_counter()
    for _ in range(200):
        loss, grads = grad_fn(xt, yt)
        opt(grads)
    final = float(loss)
    elapsed = time.perf_counter() - start
    ms.set_context(mode=ms.PYNATIVE_MODE)
    return elapsed, final


def torch_regression():
    import torch
    torch.set_num_threads(1)
    x, y = data()
    lin = torch.nn.Linear(4, 1)
    with torch.no_grad():
        lin.weight.copy_(torch.from_numpy(W0))
        lin.bias.zero_()
    opt = torch.optim.Adam(lin.parameters(), lr=0.05)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    start = time.perf_counter()
    for _ in range(200):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(lin(xt), yt)
        loss.backward()
        opt.step()
    final = float(loss.detach())
    return time.perf_counter() - start, final


def mindspore_regression(jit):
    import mindspore as ms
    from mindspore import Tensor, nn, ops
    ms.set_context(mode=ms.PYNATIVE_MODE, device_target="CPU")
    net = nn.Dense(4, 1, weight_init=Tensor(W0), bias_init="zeros")
    opt = nn.Adam(net.trainable_params(), learning_rate=0.05)

    def forward_fn(a, b):  # a def, not a lambda: MindSpore's graph compiler parses the source
        return ops.mse_loss(net(a), b)

    grad_fn = ms.value_and_grad(forward_fn, None, net.trainable_params())

    def step(a, b):
        loss, grads = grad_fn(a, b)
        opt(grads)
        return loss

    if jit:
        step = ms.jit(step)
    x, y = data()
    xt, yt = Tensor(x), Tensor(y)
    step(xt, yt)  # compile outside the timing
    start = time.perf_counter()
    for _ in range(200):
        loss = step(xt, yt)
    return time.perf_counter() - start, float(loss.asnumpy())


def main():
    have_torch = importlib.util.find_spec("torch") is not None
    have_ms = importlib.util.find_spec("mindspore") is not None
    print("== eager dispatch of a + b, 2x2 float32 (ns per op, best of 5)")
    import spore
    a = spore.Tensor(np.ones((2, 2), np.float32))
    rows = [("spore", best_ns("a + b", {"a": a, "b": a}))]
    if have_torch:
        import torch
        torch.set_num_threads(1)
        ta = torch.ones(2, 2)
        rows.append(("torch", best_ns("a + b", {"a": ta, "b": ta})))
    if have_ms:
        import mindspore
        ma = mindspore.Tensor(np.ones((2, 2), np.float32))
        rows.append(("mindspore pynative", best_ns("a + b", {"a": ma, "b": ma}, number=10_000)))
    for name, ns in rows:
        print(f"  {name:20s} {ns:9.0f} ns   spore/this = {rows[0][1] / ns:.2f}x")

    print("== 200-step Adam regression (ms per 200 steps, best of 3; final loss)")
    cases = [("spore pynative", lambda: spore_regression(False)), ("spore graph_mode", lambda: spore_regression(True))]
    if have_torch:
        cases.append(("torch eager", torch_regression))
    if have_ms:
        cases += [("mindspore pynative", lambda: mindspore_regression(False)),
                  ("mindspore @jit", lambda: mindspore_regression(True))]
    results = []
    for name, fn in cases:
        runs = [fn() for _ in range(3)]
        results.append((name, min(r[0] for r in runs) * 1e3, runs[0][1]))
    base = results[0][1]
    for name, ms_, loss in results:
        print(f"  {name:20s} {ms_:9.1f} ms   loss {loss:.2e}   this/spore = {ms_ / base:.2f}x")


if __name__ == "__main__":
    main()
