#!/usr/bin/env python3
"""Runs the issue-3 training benchmarks and their peers in interleaved rounds; prints medians and
ratios (peer time / Spore time: above 1 means Spore is faster).

usage: bench/run_train.py [--build build/release] [--rounds 5] [--threads 2]

Spore: build/<preset>/bench/train_bench (Google Benchmark). Peers, each run in the same round:
  * PyTorch Python (bench/peers/torch_train.py under Debian's /usr/bin/python3), given its best
    speed on this machine: OPENBLAS_CORETYPE unset (that variable halves OpenBLAS here) and glibc
    malloc told not to trim or mmap (GLIBC_TUNABLES), which saves PyTorch 25-40 % per MLP step;
  * libtorch C++ (bench/peers/libtorch_linreg.cpp, compiled here) for the regression loop.
Spore runs with the environment as it is (it uses neither OpenBLAS nor those malloc settings).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTRIM = "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"


def peer_env(threads):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.update(GLIBC_TUNABLES=NOTRIM, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               SPORE_BENCH_THREADS=str(threads))
    return env


def parse_peer(text):
    for line in text.splitlines():
        if "median_ms=" in line:
            return float(line.split("median_ms=")[1].split()[0])
    raise RuntimeError("no median in peer output:\n" + text)


def spore_round(binary, threads):
    env = dict(os.environ, SPORE_BENCH_THREADS=str(threads))
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=0.5"], env=env,
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for b in json.loads(out)["benchmarks"]:
        unit = {"ms": 1.0, "us": 1e-3, "ns": 1e-6}[b["time_unit"]]
        res[b["name"].split("/real_time")[0]] = b["real_time"] * unit
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench", "train_bench")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is missing: cmake --build {a.build} --target train_bench")

    libtorch = None
    if os.path.isdir("/usr/include/torch/csrc/api/include"):
        libtorch = os.path.join(a.build, "bench", "libtorch_linreg")
        src = os.path.join(ROOT, "bench", "peers", "libtorch_linreg.cpp")
        if not os.path.exists(libtorch) or os.path.getmtime(src) > os.path.getmtime(libtorch):
            subprocess.run(["g++", "-O2", "-std=c++17", "-I/usr/include/torch/csrc/api/include", src, "-o", libtorch,
                            "-ltorch", "-ltorch_cpu", "-lc10"], check=True)
    py = "/usr/bin/python3"
    peer_py = os.path.join(ROOT, "bench", "peers", "torch_train.py")
    have_torch = shutil.which(py) and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0

    rows = [  # (label, spore benchmark, peers: (label, command))
        ("regression, 200 steps (ms)", "BM_LinregTrain200",
         [("libtorch", [libtorch, "10"] if libtorch else None), ("PyTorch", [py, peer_py, "linreg", "50"])]),
        ("MLP step float32 (ms)", "BM_MlpStep/0", [("PyTorch", [py, peer_py, "mlp_fp32", "50"])]),
        ("MLP step bf16 mixed (ms)", "BM_MlpStep/1", [("PyTorch", [py, peer_py, "mlp_bf16", "50"])]),
        ("digits CNN step (ms)", "BM_DigitsCnnStep", [("PyTorch", [py, peer_py, "cnn", "50"])]),
    ]
    samples = {}
    for r in range(a.rounds):
        for name, t in spore_round(binary, a.threads).items():
            samples.setdefault(("Spore", name), []).append(t)
        for _, bench, peers in rows:
            for label, cmd in peers:
                if cmd is None or (label == "PyTorch" and not have_torch):
                    continue
                out = subprocess.run(cmd, env=peer_env(a.threads), capture_output=True, text=True, check=True).stdout
                samples.setdefault((label, bench), []).append(parse_peer(out))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    print(f"threads {a.threads}, {a.rounds} interleaved rounds, medians")
    print("| workload | Spore | peer | peer time | peer / Spore |")
    print("|---|---|---|---|---|")
    for label, bench, peers in rows:
        s = statistics.median(samples[("Spore", bench)])
        for plabel, _ in peers:
            if (plabel, bench) not in samples:
                print(f"| {label} | {s:.4f} | {plabel} | not measured | |")
                continue
            p = statistics.median(samples[(plabel, bench)])
            print(f"| {label} | {s:.4f} | {plabel} | {p:.4f} | {p / s:.2f} |")


if __name__ == "__main__":
    main()
