#!/usr/bin/env python3
"""MindSpore peer of BM_Regression200 (bench/graph_bench.cc): 200 Adam steps (lr 0.05) of
Dense(4, 1) on 64x4 float32 data with MSE, the loss read back each step, timed per 200-step run
on a fresh layer; PyNative, or GRAPH_MODE with the train step under @ms.jit (its first call
compiles, inside the timed run, as Spore's trace is inside its own).

usage: mindspore_linreg.py pynative|graph [runs]
prints "mindspore linreg_train200 <mode> median_ms=... min_ms=... end_loss=..."
Runs only from the peers' venv (/work/main/.venv-peers) with `pip install mindspore`.
"""
import statistics
import sys
import time

import mindspore as ms
import numpy as np
from mindspore import nn


def main():
    mode = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE, device_target="CPU")
    rng = np.random.default_rng(2024)
    x = rng.standard_normal((64, 4)).astype(np.float32)
    y = (x @ np.array([[0.5], [-0.75], [0.25], [1.0]], np.float32) + 0.25).astype(np.float32)
    xt, yt = ms.Tensor(x), ms.Tensor(y)
    times, loss = [], 0.0
    for _ in range(runs + 1):
        net = nn.Dense(4, 1)
        opt = nn.Adam(net.trainable_params(), learning_rate=0.05)
        loss_fn = nn.MSELoss()

        def forward(a, b):
            return loss_fn(net(a), b)

        grad_fn = ms.value_and_grad(forward, None, opt.parameters)

        def step(a, b):
            l, g = grad_fn(a, b)
            opt(g)
            return l

        if mode == "graph":
            step = ms.jit(step)
        t0 = time.perf_counter()
        for _ in range(200):
            loss = float(step(xt, yt).asnumpy())
        times.append((time.perf_counter() - t0) * 1e3)
    times = times[1:]  # the first run pays the framework's own start-up
    print(f"mindspore linreg_train200 {mode} median_ms={statistics.median(times):.3f} min_ms={min(times):.3f} "
          f"end_loss={loss:.3g}")


if __name__ == "__main__":
    main()
