#!/usr/bin/python3
"""PyTorch peers of bench/train_bench.cc (the same workloads, timed the same way).

usage: torch_train.py linreg|mlp_fp32|mlp_bf16|cnn [repeats]
Prints one line per workload: "torch <name> median_ms=<m> min_ms=<b> [loss=...]".
  linreg    200 Adam steps (lr 0.05) of Linear(4, 1) on 64x4 float32 data, MSE: one timing per
            200-step run on a fresh layer (what BM_LinregTrain200 times)
  mlp_*     one step (zero_grad, forward, backward, Adam) of MLP 784-512-512-10 at batch 128;
            bf16 = torch.autocast("cpu", torch.bfloat16)
  cnn       one step of the digits CNN (examples/common/digits_cnn.h) at batch 32
Run it with Debian's /usr/bin/python3 (python3-torch); bench/run_train.sh sets the threads and
the environment that gives PyTorch its best speed here.
"""
import statistics
import sys
import time

import torch
import torch.nn as nn

threads = int(__import__("os").environ.get("SPORE_BENCH_THREADS", "2"))
torch.set_num_threads(threads)
which = sys.argv[1]
repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 50


def timed(fn, warmup, n):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        out = fn()
        ts.append(time.perf_counter() - t0)
    return ts, out


def report(name, ts, loss):
    print(f"torch {name} median_ms={statistics.median(ts) * 1e3:.4f} min_ms={min(ts) * 1e3:.4f} loss={loss:.4e}")


def step_fn(model, x, y, lr, autocast=False):
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad()
        if autocast:
            with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
        else:
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()
    return step


torch.manual_seed(0)
if which == "linreg":
    x = torch.randn(64, 4)
    y = x @ torch.tensor([[0.5], [-0.75], [0.25], [1.0]]) + 0.125

    def run200():
        model = nn.Linear(4, 1)
        opt = torch.optim.Adam(model.parameters(), lr=0.05)
        loss_fn = nn.MSELoss()
        for _ in range(200):
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        return loss.item()
    ts, loss = timed(run200, 2, max(5, repeats // 5))
    report("linreg_train200", ts, loss)
elif which in ("mlp_fp32", "mlp_bf16"):
    model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    x = torch.randn(128, 784)
    y = torch.randint(0, 10, (128,))
    ts, loss = timed(step_fn(model, x, y, 1e-3, which == "mlp_bf16"), 20, repeats)
    report(which + "_step", ts, loss)
elif which == "cnn":
    model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(128, 10))
    x = torch.rand(32, 1, 8, 8)
    y = torch.randint(0, 10, (32,))
    ts, loss = timed(step_fn(model, x, y, 2e-3), 20, repeats * 4)
    report("cnn_step", ts, loss)
else:
    sys.exit(f"unknown workload {which}")
