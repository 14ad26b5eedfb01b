#!/usr/bin/env python3
"""Issue 31's benchmarks in one run; prints the machine, its load and two Markdown tables.

usage: bench/run_dist.py [--build build/release] [--steps 50] [--iters 20] [--max-mib 256]
                         [--torch-python /work/main/.venv-peers/bin/python]
       bench/run_dist.py --allreduce-rounds R [--iters 20] [--max-mib 4]

--allreduce-rounds R: only the all_reduce table, Spore and the C MPI_Allreduce run alternately R
times each (interleaved, so a load that comes and goes hits both alike), each figure the median
over the rounds of the per-run medians, with every round's figures and the load printed too:
the form for a loaded machine, where one run of each says little.

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


# --launcher-defaults: Open MPI's own choices instead (what `spore launch -n 2` and a plain
# `mpirun -np 2` give): each rank bound to a core, and spinning while it waits (Open MPI yields
# only when the ranks outnumber the slots). NOTE [The caller runs its own all-reduce] explains
# why that is the fairer condition on a busy machine.
LAUNCHER_DEFAULTS = False


def mpirun(ranks, threads, argv, extra_env=None):
    bind = [] if LAUNCHER_DEFAULTS and ranks > 1 else ["--bind-to", "none"]
    cmd = ["mpirun", "--oversubscribe", *bind, "-np", str(ranks),
           "-x", f"SPORE_NUM_THREADS={threads}", "-x", f"OMP_NUM_THREADS={threads}"]
    if os.geteuid() == 0:
        cmd.insert(1, "--allow-run-as-root")
    base = dict(MPI_ENV)
    if LAUNCHER_DEFAULTS:
        del base["OMPI_MCA_mpi_yield_when_idle"]
    env = dict(os.environ, **base, **(extra_env or {}))
    if LAUNCHER_DEFAULTS:
        env.pop("OMPI_MCA_mpi_yield_when_idle", None)
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
    ap.add_argument("--allreduce-rounds", type=int, default=0,
                    help="only the all_reduce table: Spore and MPI_Allreduce interleaved this many times")
    ap.add_argument("--before", help="with --allreduce-rounds: another dist_bench (an older build) in every round")
    ap.add_argument("--launcher-defaults", action="store_true",
                    help="2-rank jobs with Open MPI's default binding and waiting (no --bind-to none, no yield)")
    ap.add_argument("--torch-python", default=os.environ.get("SPORE_TORCH_PYTHON", sys.executable))
    a = ap.parse_args()
    global LAUNCHER_DEFAULTS
    LAUNCHER_DEFAULTS = a.launcher_defaults
    bench = os.path.join(a.build, "bench", "dist_bench")
    if not os.path.exists(bench):
        sys.exit(f"{bench} is missing: cmake --build {a.build} --target dist_bench (needs MPI)")
    peer = os.path.join(a.build, "bench", "mpi_allreduce")
    subprocess.run([shutil.which("mpicc") or "mpicc", "-O2", "-o", peer,
                    os.path.join(ROOT, "bench", "peers", "mpi_allreduce.c")], check=True)

    print(f"Machine: {machine(a.torch_python)}")
    if a.allreduce_rounds:
        return interleaved_allreduce(bench, peer, a)
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


def interleaved_allreduce(bench, peer, a):
    """Spore's all_reduce and MPI_Allreduce (C), alternately, a.allreduce_rounds times each."""
    runs = {"spore": [], "mpi": [], "before": []}
    loads = [load()[0]]
    for r in range(a.allreduce_rounds):
        if a.before:
            runs["before"].append(medians(mpirun(2, 1, [a.before, "allreduce", str(a.iters), str(a.max_mib)]), "mib"))
        runs["spore"].append(medians(mpirun(2, 1, [bench, "allreduce", str(a.iters), str(a.max_mib)]), "mib"))
        runs["mpi"].append(medians(mpirun(2, 1, [peer, str(a.iters), "b", str(a.max_mib)]), "mib"))
        loads.append(load()[0])
        print(f"round {r + 1}: load {loads[-1]}; spore " +
              " ".join(f"{k} MiB {v:.3f}" for k, v in sorted(runs["spore"][-1].items(), key=lambda kv: int(kv[0]))) +
              "; mpi " + " ".join(f"{k} MiB {v:.3f}" for k, v in sorted(runs["mpi"][-1].items(), key=lambda kv: int(kv[0]))) +
              ("; before " + " ".join(f"{k} MiB {v:.3f}" for k, v in sorted(runs["before"][-1].items(), key=lambda kv: int(kv[0])))
               if a.before else ""), flush=True)
    mid = lambda xs: sorted(xs)[len(xs) // 2]
    how = ("Open MPI's defaults (ranks bound to cores, spinning waits)" if LAUNCHER_DEFAULTS
           else "--bind-to none, mpi_yield_when_idle=1")
    print(f"MPI settings: {how}; load average (1 min) over the rounds: {' '.join(loads)}\n")
    # Two figures of the ratio: the medians' ratio, and the median of each round's own ratio (a
    # round's two runs are seconds apart, so a load that comes and goes cancels within it).
    print(f"| all_reduce, 2 ranks, float32 (median of {a.allreduce_rounds} interleaved runs) | Spore | "
          "Open MPI MPI_Allreduce (C) | Spore / MPI bandwidth | median of the rounds' own ratios |")
    print("|---|---|---|---|---|")
    for mib in sorted(runs["spore"][0], key=int):
        s, m = mid([x[mib] for x in runs["spore"]]), mid([x[mib] for x in runs["mpi"]])
        paired = mid([mp[mib] / sp[mib] for sp, mp in zip(runs["spore"], runs["mpi"])])
        gbs = lambda ms: int(mib) * 2**20 / (ms * 1e-3) / 1e9
        print(f"| {mib} MiB | {s:.3f} ms ({gbs(s):.2f} GB/s) | {m:.3f} ms ({gbs(m):.2f} GB/s) | {m / s:.2f} "
              f"| {paired:.2f} |")
    if a.before:
        print(f"\n| the --before build | Spore | MPI_Allreduce (C) | median of the rounds' own ratios |")
        print("|---|---|---|---|")
        for mib in sorted(runs["before"][0], key=int):
            b, m = mid([x[mib] for x in runs["before"]]), mid([x[mib] for x in runs["mpi"]])
            paired = mid([mp[mib] / bp[mib] for bp, mp in zip(runs["before"], runs["mpi"])])
            print(f"| {mib} MiB | {b:.3f} ms | {m:.3f} ms | {paired:.2f} |")


if __name__ == "__main__":
    main()
