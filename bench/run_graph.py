#!/usr/bin/env python3
"""Runs the graph-mode benchmarks (bench/graph_bench.cc) and the libtorch regression peer in
interleaved rounds; prints medians and ratios.

usage: bench/run_graph.py [--build build/release] [--rounds 5] [--threads 2] [--skip-mindspore]

Rows: the chapter's regression loop (200 Adam steps) compiled vs eager Spore vs libtorch C++
(bench/peers/libtorch_linreg.cpp, built as run_train.py builds it); the MLP step compiled vs
eager in float32 and bf16 mixed, with the compiled graph's planned intermediate bytes; the
trace-and-compile time of the MLP step. MindSpore's GRAPH_MODE peer: bench/peers/mindspore_linreg.py
when the peers' venv has mindspore (scripts/install-py-peers.sh does not install it).
"""
import argparse
import glob
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_train import ROOT, parse_peer, peer_env, spore_round  # noqa: E402


def torch_dirs():
    """libtorch's include and library folders: Debian's (/usr) or the peers' venv's pip torch
    (.venv-peers, whose wheel ships the C++ headers and libraries; it wants C++20)."""
    if os.path.isdir("/usr/include/torch/csrc/api/include"):
        return ["-I/usr/include/torch/csrc/api/include"], [], "c++17"
    for venv in (os.path.join(ROOT, ".venv-peers"), os.path.join(ROOT, "..", "main", ".venv-peers")):
        for t in sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages", "torch"))):
            t = os.path.realpath(t)
            if os.path.isdir(os.path.join(t, "include", "torch", "csrc", "api", "include")):
                lib = os.path.join(t, "lib")
                return ([f"-I{t}/include", f"-I{t}/include/torch/csrc/api/include"],
                        [f"-L{lib}", f"-Wl,-rpath,{lib}"], "c++20")
    return None


def build_libtorch(build):
    dirs = torch_dirs()
    if not dirs:
        return None
    inc, lib, std = dirs
    exe = os.path.join(build, "bench", "libtorch_linreg")
    src = os.path.join(ROOT, "bench", "peers", "libtorch_linreg.cpp")
    if not os.path.exists(exe) or os.path.getmtime(src) > os.path.getmtime(exe):
        subprocess.run(["g++", "-O2", f"-std={std}", *inc, src, "-o", exe, *lib,
                        "-ltorch", "-ltorch_cpu", "-lc10"], check=True)
    return exe


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--skip-mindspore", action="store_true", help="leave out the (slow) MindSpore peer")
    a = ap.parse_args()
    binary = os.path.join(a.build, "bench", "graph_bench")
    if not os.path.exists(binary):
        sys.exit(f"{binary} is missing: cmake --build {a.build} --target graph_bench")
    libtorch = build_libtorch(a.build)
    ms_py = os.path.join(ROOT, "..", "main", ".venv-peers", "bin", "python")
    ms_script = os.path.join(ROOT, "bench", "peers", "mindspore_linreg.py")
    have_ms = not a.skip_mindspore and os.path.exists(ms_py) and subprocess.run(
        [ms_py, "-c", "import mindspore"], capture_output=True).returncode == 0

    samples = {}
    for r in range(a.rounds):
        for name, t in spore_round(binary, a.threads).items():
            samples.setdefault(name, []).append(t)
        if libtorch:
            out = subprocess.run([libtorch, "10"], env=peer_env(a.threads), capture_output=True, text=True,
                                 check=True).stdout
            samples.setdefault("libtorch", []).append(parse_peer(out))
        if have_ms:
            for mode in ("pynative", "graph"):
                out = subprocess.run([ms_py, ms_script, mode, "1"], env=peer_env(a.threads), capture_output=True,
                                     text=True, check=True).stdout
                samples.setdefault("mindspore_" + mode, []).append(parse_peer(out))
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)

    med = {k: statistics.median(v) for k, v in samples.items()}
    eager, compiled = med["BM_Regression200/compiled:0"], med["BM_Regression200/compiled:1"]
    print(f"threads {a.threads}, {a.rounds} interleaved rounds, medians (ms)")
    print("| workload | compiled | peer | peer time | peer / compiled | target |")
    print("|---|---|---|---|---|---|")
    print(f"| regression, 200 steps | {compiled:.3f} | eager Spore | {eager:.3f} | {eager / compiled:.2f} | >= 2 |")
    for peer, label in (("libtorch", "libtorch C++"), ("mindspore_graph", "MindSpore GRAPH_MODE"),
                        ("mindspore_pynative", "MindSpore PyNative")):
        if peer in med:
            print(f"| regression, 200 steps | {compiled:.3f} | {label} | {med[peer]:.3f} | {med[peer] / compiled:.1f} |"
                  f" {'>= 50' if peer == 'libtorch' else '(reported)'} |")
        else:
            print(f"| regression, 200 steps | {compiled:.3f} | {label} | not measured | | |")
    for bf16, label in ((0, "float32"), (1, "bf16 mixed")):
        c, e = med[f"BM_MlpStep/compiled:1/bf16:{bf16}"], med[f"BM_MlpStep/compiled:0/bf16:{bf16}"]
        print(f"| MLP step, {label} | {c:.3f} | eager Spore | {e:.3f} | {e / c:.2f} | >= 1.1 |")
    print(f"| MLP step, trace + compile (first call) | {med['BM_MlpTraceAndCompile']:.3f} | | | | < 20 ms |")


if __name__ == "__main__":
    main()
