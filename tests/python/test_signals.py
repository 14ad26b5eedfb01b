"""Signals that arrive while the GIL is released (issue 25): a handled signal delivered to a thread
inside oneDNN's JIT GEMM pushed its frame onto the heap (the kernel points rsp at its workspace)
and glibc later aborted with "corrupted size vs. prev_size while consolidating". NOTE [Signals and
kernels] in docs/design.md: no asynchronous signal is delivered to a thread while it runs a oneDNN
primitive; it waits until the call returns.

A child per oneDNN ISA (all at once) loops over GIL-free calls (matmuls of several shapes, a
transposed one, conv2d, max/avg pooling), checking every result against NumPy, while this process
sends it SIGUSR1 (the child counts them in a Python handler) at random 0.5-3 ms intervals, then
SIGINT. Each child must end with KeyboardInterrupt and Python's clean SIGINT exit, with every
result right. Run by ctest as `python.signals` (label concurrency; scripts/stress-tests.sh
repeats it); without the fix the AVX2 child died of a heap abort in every run.
"""
import os
import random
import signal
import subprocess
import sys
import time

import pytest

CHILD = r"""
import signal, sys
import numpy as np
import spore as ms

handled = 0
def on_usr1(signum, frame):
    global handled
    handled += 1
signal.signal(signal.SIGUSR1, on_usr1)

rng = np.random.default_rng(0)
def rand(*shape):
    return rng.standard_normal(shape).astype(np.float32)

# float64 references, so a wrong result (not only a crash) fails the test
mats = [(rand(256, 256), rand(256, 256)), (rand(192, 160), rand(160, 224)), (rand(64, 256), rand(256, 48)),
        (rand(300, 33), rand(33, 301))]
mm = [(ms.Tensor(a), ms.Tensor(b), a.astype(np.float64) @ b) for a, b in mats]
at, bt = rand(128, 96), rand(128, 80)  # a transposed view as the left operand
mmt = (ms.Tensor(at), ms.Tensor(bt), at.T.astype(np.float64) @ bt)
x, w = rand(2, 4, 24, 24), rand(6, 4, 3, 3)
win = np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3), axis=(2, 3))
conv_ref = np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64))
pool = x.reshape(2, 4, 12, 2, 12, 2)
max_ref, avg_ref = pool.max(axis=(3, 5)), pool.astype(np.float64).mean(axis=(3, 5))
tx, tw = ms.Tensor(x), ms.Tensor(w)

def check(name, got, want, tol):
    err = float(np.abs(got.asnumpy().astype(np.float64) - want).max())
    if not err <= tol:
        print(f"mismatch: {name} differs from NumPy by {err}", flush=True)
        sys.exit(3)

calls = 0
print("ready", flush=True)
try:
    while True:
        for a, b, want in mm:
            check("matmul", ms.ops.matmul(a, b), want, 1e-3)
        check("matmul(a.T, b)", ms.ops.matmul(mmt[0].T, mmt[1]), mmt[2], 1e-3)
        check("conv2d", ms.ops.conv2d(tx, tw), conv_ref, 1e-3)
        check("max_pool2d", ms.ops.max_pool2d(tx, 2, 2), max_ref, 0)
        check("avg_pool2d", ms.ops.avg_pool2d(tx, 2, 2), avg_ref, 1e-5)
        calls += len(mm) + 4
except KeyboardInterrupt:
    print(f"interrupted after {calls} calls, {handled} SIGUSR1 handled", flush=True)
    raise
"""


def cpu_has_avx2():
    try:
        with open("/proc/cpuinfo") as f:
            return " avx2" in f.read()
    except OSError:
        return False


# The default oneDNN ISA, and oneDNN limited to AVX2 (the kernels an AVX2-only CPU such as AMD
# Zen 3 runs, where the JIT GEMM moves rsp; the AVX-512 path mostly runs brgemm kernels instead).
CASES = [("best", {})]
if cpu_has_avx2():
    CASES.append(("avx2", {"ONEDNN_MAX_CPU_ISA": "AVX2", "SPORE_CPU_ISA": "avx2"}))


def run_children(code, envs, usr1_seconds, sigint_after=0.0, seed=0):
    """Starts one child per env at once (the cases share the test's seconds), sends each SIGUSR1
    at random 0.5-3 ms intervals for usr1_seconds, waits sigint_after, then sends SIGINT.
    Returns (returncode, stdout, stderr, SIGUSR1 sent, seconds from SIGINT to exit) per child."""
    kids = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=dict(os.environ, **env)) for env in envs]
    try:
        for p in kids:
            assert p.stdout.readline().strip() == "ready", p.stderr.read()
        rnd = random.Random(seed)
        sent = [0] * len(kids)
        end = time.monotonic() + usr1_seconds
        while time.monotonic() < end:
            time.sleep(rnd.uniform(0.0005, 0.003))
            for i, p in enumerate(kids):
                if p.poll() is None:
                    p.send_signal(signal.SIGUSR1)
                    sent[i] += 1
        time.sleep(sigint_after)
        start = time.monotonic()
        for p in kids:
            if p.poll() is None:
                p.send_signal(signal.SIGINT)
        results = []
        for i, p in enumerate(kids):
            out, err = p.communicate(timeout=60)
            results.append((p.returncode, out, err, sent[i], time.monotonic() - start))
        return results
    finally:
        for p in kids:
            if p.poll() is None:
                p.kill()
                p.wait()


def clean_interrupt(rc, err):
    # Python ends an unhandled KeyboardInterrupt by re-raising SIGINT with the default action:
    # -SIGINT is a clean exit; a heap abort is -SIGABRT, a stack or heap smash often -SIGSEGV.
    return rc == -signal.SIGINT and "KeyboardInterrupt" in err


def test_signals_during_gil_free_calls_leave_the_heap_intact():
    seconds = float(os.environ.get("SPORE_SIGNAL_TEST_SECONDS", "1.0"))
    results = run_children(CHILD, [env for _, env in CASES], seconds)
    for (name, _), (rc, out, err, sent, ended_in) in zip(CASES, results):
        what = f"{name}: exit {rc}, {sent} SIGUSR1 sent\nstdout: {out}\nstderr tail: {err[-2000:]}"
        assert "mismatch" not in out, what
        assert clean_interrupt(rc, err), what
        assert "interrupted after" in out, what
        calls = int(out.split("interrupted after ")[1].split()[0])
        handled = int(out.split(" calls, ")[1].split()[0])
        assert calls > 0 and handled > 0, what  # the loop ran, and signals reached the handler
        assert ended_in < 10, what  # promptly


def test_ctrl_c_interrupts_a_loop_of_long_calls():
    """SIGINT during a loop of GIL-free matmuls ends the program with KeyboardInterrupt, promptly,
    and with Python's clean SIGINT exit (moved here from test_two_runtimes.py: the case issue 25
    saw die of a heap abort in 6 runs of 8 on an AVX2-only CPU), at each oneDNN ISA."""
    code = ("import numpy as np, spore as ms, sys\n"
            "a = ms.Tensor(np.ones((256, 256), np.float32))\n"
            "print('ready', flush=True)\n"
            "while True:\n"
            "    a = ms.ops.matmul(a, a) * (1.0 / 256)\n")
    results = run_children(code, [env for _, env in CASES], 0.0, sigint_after=0.3)
    for (name, _), (rc, _, err, _, ended_in) in zip(CASES, results):
        assert clean_interrupt(rc, err), (name, rc, err[-2000:])
        assert ended_in < 10, name


DATASET_CHILD = r"""
import time
import numpy as np
from spore.dataset import GeneratorDataset

def gen():
    for i in range(10 ** 9):
        yield (np.array([i], np.float32),)

def slow(x):
    time.sleep(0.001)
    return x * 2

ds = GeneratorDataset(gen, column_names=["a"]).map(slow, ["a"], num_parallel_workers=4)
print("ready", flush=True)
for row in ds.create_tuple_iterator():
    pass
"""


def test_ctrl_c_while_map_workers_call_python_exits_cleanly():
    """Ctrl-C in a loop over a dataset whose map workers (C++ threads) call a Python function: the
    pass stays referenced by the traceback, so its workers must be stopped before the interpreter
    finalizes (NOTE [Passes at exit]); a worker that asked for the GIL later was ended by Python
    with pthread_exit ("FATAL: exception not rethrown", or SIGSEGV) in 8 runs of 8 before."""
    results = run_children(DATASET_CHILD, [{}, {}], 0.0, sigint_after=0.3)
    for child, (rc, _, err, _, _) in enumerate(results):
        assert clean_interrupt(rc, err), (child, rc, err[-2000:])
