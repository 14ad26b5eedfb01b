#!/usr/bin/env python3
"""Issue 31's benchmarks in one run; prints the machine, its load and two Markdown tables.

usage: bench/run_dist.py [--build build/release] [--steps 50] [--iters 20] [--max-mib 256]
                         [--torch-python /work/main/.venv-peers/bin/python]

1. Training step scaling on this machine's 2 cores: Spore's MLP and digits-CNN step
   (build/<preset>/bench/dist_bench) at 1 rank x 2 threads (the plain single-process step) and at
   2 ranks x 1 thread (DistributedDataParallel over MPI), the same global batch; and PyTorch's
   (bench/peers/torch_ddp.py, DDP over Gloo) at the same two shapes.
2. all_reduce bandwidth, 2 ranks, 1-256 MiB float32: Spore's ProcessGroup against Open MPI's own
   MPI_Allreduce in C (bench/peers/mpi_allreduce.c, built here with mpicc), and against
   MPI_Iallreduce completed by MPI_Test; Spore twice: its default path (MPI_Allreduce on the MPI
   backend's all-reduce thread) and SPORE_MPI_ALLREDUCE_THREAD=0 (MPI_Iallreduce polled by the
   caller, the path before NOTE [All-reduce on MPI's blocking path]).
Ratios compare figures of this one run only. Every MPI job gets the MCA settings of the tests
(shared memory and self, no single-copy mechanism: containers lack ptrace rights for CMA) plus
yield-when-idle, and PyTorch OMP_WAIT_POLICY=passive too.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# mpi_yield_when_idle: a rank blocked in MPI_Allreduce yields its core while it polls, as Spore's
# wait loop does (NOTE [Distributed training]); on a loaded machine a spinning waiter would
# otherwise steal the core of the rank it waits for, and the peer would measure the scheduler.
MPI_ENV = {"OMPI_MCA_btl": "self,vader", "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
           "OMPI_MCA_mpi_yield_when_idle": "1", "OMP_WAIT_POLICY": "passive"}


def mpirun(ranks, threads, argv, extra_env=None):
    cmd = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", str(ranks),
           "-x", f"SPORE_NUM_THREADS={threads}", "-x", f"OMP_NUM_THREADS={threads}"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    env = dict(os.environ, **MPI_ENV, **(extra_env or {}))
    return subprocess.run(cmd + argv, env=env, capture_output=True, text=True, check=True).stdout


def medians(text, key):
    """{key value: median_ms} from lines like 'spore allreduce ranks=2 mib=4 median_ms=1.2'."""
    out = {}
    for line in text.splitlines():
        m = re.search(rf"{key}=(\w+).*median_ms=([0-9.]+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def machine(torch_python):
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    mpi = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    torch = subprocess.run([torch_python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                           text=True).stdout.strip() or "not importable"
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    return (f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, commit {commit}; {os.cpu_count()} cores, {cpu}; "
            f"{mpi}; PyTorch {torch}")


def load():
    return open("/proc/loadavg").read().split()[:3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--max-mib", type=int, default=256, help="largest all_reduce buffer (1, 4, 16, ... MiB)")
    ap.add_argument("--torch-python", default=os.environ.get("SPORE_TORCH_PYTHON", sys.executable))
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "dist_bench")
    if not os.path.exists(bench):
        sys.exit(f"{bench} is missing: cmake --build {a.build} --target dist_bench (needs MPI)")
    peer = os.path.join(a.build, "bench", "mpi_allreduce")
    subprocess.run([shutil.which("mpicc") or "mpicc", "-O2", "-o", peer,
                    os.path.join(ROOT, "bench", "peers", "mpi_allreduce.c")], check=True)

    print(f"Machine: {machine(a.torch_python)}")
    load_before = load()
    steps = {}
    for model in ("mlp", "cnn"):
        for ranks, threads in ((1, 2), (2, 1)):
            out = mpirun(ranks, threads, [bench, "step", model, str(a.steps)])
            steps[("spore", model, ranks)] = medians(out, "step")[model]
            env = dict(os.environ, SPORE_BENCH_THREADS=str(threads), OMP_NUM_THREADS=str(threads),
                       OMP_WAIT_POLICY="passive")
            out = subprocess.run([a.torch_python, os.path.join(ROOT, "bench", "peers", "torch_ddp.py"), model,
                                  str(ranks), str(a.steps)], env=env, capture_output=True, text=True, check=True).stdout
            steps[("torch", model, ranks)] = medians(out, "step")[model]
    sizes = [bench, "allreduce", str(a.iters), str(a.max_mib)]
    spore_ar = medians(mpirun(2, 1, sizes), "mib")
    spore_iar = medians(mpirun(2, 1, sizes, {"SPORE_MPI_ALLREDUCE_THREAD": "0"}), "mib")
    mpi_ar = medians(mpirun(2, 1, [peer, str(a.iters), "b", str(a.max_mib)]), "mib")
    mpi_iar = medians(mpirun(2, 1, [peer, str(a.iters), "i", str(a.max_mib)]), "mib")
    load_after = load()
    print(f"Load average (1, 5, 15 min): {' '.join(load_before)} before, {' '.join(load_after)} after\n")

    print("| step (global batch) | Spore 1 rank x 2 threads | Spore 2 ranks x 1 thread | Spore scaling (1x2 / 2x1) "
          "| PyTorch 1 x 2 | PyTorch DDP (Gloo) 2 x 1 | PyTorch DDP / Spore, 2 x 1 |")
    print("|---|---|---|---|---|---|---|")
    for model, batch in (("mlp", 128), ("cnn", 32)):
        s1, s2 = steps[("spore", model, 1)], steps[("spore", model, 2)]
        t1, t2 = steps[("torch", model, 1)], steps[("torch", model, 2)]
        print(f"| {model.upper()} ({batch}) | {s1:.3f} ms | {s2:.3f} ms | {s1 / s2:.2f} | {t1:.3f} ms | {t2:.3f} ms "
              f"| {t2 / s2:.2f}x |")
    print("\n| all_reduce, 2 ranks, float32 | Spore | Open MPI MPI_Allreduce (C) | Spore / MPI bandwidth "
          "| Spore, SPORE_MPI_ALLREDUCE_THREAD=0 | MPI_Iallreduce + MPI_Test loop (C) |")
    print("|---|---|---|---|---|---|")
    for mib in sorted(spore_ar, key=int):
        s, si, m, i = spore_ar[mib], spore_iar[mib], mpi_ar[mib], mpi_iar[mib]
        gbs = lambda ms: int(mib) * 2**20 / (ms * 1e-3) / 1e9
        print(f"| {mib} MiB | {s:.3f} ms ({gbs(s):.2f} GB/s) | {m:.3f} ms ({gbs(m):.2f} GB/s) | {m / s:.2f} "
              f"| {si:.3f} ms ({gbs(si):.2f} GB/s) | {i:.3f} ms ({gbs(i):.2f} GB/s) |")


if __name__ == "__main__":
    main()
