"""PyTorch's peer of bench/dist_bench.cc's step: DistributedDataParallel over Gloo on 127.0.0.1,
the same models and global batch split over the ranks, one step = zero_grad, forward, backward
(DDP's bucketed all-reduce overlapping it), Adam, loss.item(); the median over steps of the
slowest rank. Ranks are processes spawned here (torch.multiprocessing), each with
SPORE_BENCH_THREADS threads.

usage: torch_ddp.py mlp|cnn RANKS [steps]   (bench/run_dist.py runs it with the peers' venv)
Prints "torch step=<model> ranks=R threads=T median_ms=<m>"."""
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as tdist
import torch.multiprocessing as mp
import torch.nn as nn


def model_of(which):
    if which == "mlp":
        return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)), 128
    # bench/train_bench.cc's digits CNN (examples/common/digits_cnn.h)
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(128, 10)), 32


def worker(rank, ranks, which, steps, port, threads, queue):
    torch.set_num_threads(threads)
    tdist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks)
    torch.manual_seed(0)
    model, batch = model_of(which)
    rows = batch // ranks
    x = torch.randn(rows, 784) if which == "mlp" else torch.rand(rows, 1, 8, 8)
    y = torch.randint(0, 10, (rows,))
    net = nn.parallel.DistributedDataParallel(model) if ranks > 1 else model
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()
    ts = []
    for i in range(steps + 10):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        loss.item()
        if i >= 10:
            ts.append((time.perf_counter() - t0) * 1e3)
    t = torch.tensor(ts, dtype=torch.float64)
    tdist.all_reduce(t, op=tdist.ReduceOp.MAX)
    if rank == 0:
        queue.put(statistics.median(t.tolist()))
    tdist.destroy_process_group()


def main():
    which, ranks = sys.argv[1], int(sys.argv[2])
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 50
    threads = int(os.environ.get("SPORE_BENCH_THREADS", "1"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    procs = [ctx.Process(target=worker, args=(r, ranks, which, steps, port, threads, queue)) for r in range(ranks)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            sys.exit(f"torch_ddp: a rank exited with {p.exitcode}")
    print(f"torch step={which} ranks={ranks} threads={threads} median_ms={queue.get():.4f}")


if __name__ == "__main__":
    main()
