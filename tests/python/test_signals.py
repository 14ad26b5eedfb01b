"""Signals that arrive while the GIL is released (issue 25): a handled signal delivered to a thread
inside oneDNN's JIT GEMM pushed its frame onto the heap (the kernel points rsp at its workspace)
and glibc later aborted with "corrupted size vs. prev_size while consolidating". NOTE [Signals and
kernels] in docs/design.md: no asynchronous signal is delivered to a thread while it runs a oneDNN
primitive; it waits until the call returns.

Each case starts a child that loops over GIL-free calls (matmuls of several shapes, a transposed
one, conv2d, max/avg pooling), checking every result against NumPy, while this process sends it
SIGUSR1 (the child counts them in a Python handler) at random 0.5-3 ms intervals, then SIGINT.
The child must end with KeyboardInterrupt and Python's clean SIGINT exit, every time, with every
result right. Run by ctest as `python.signals` (label concurrency; scripts/stress-tests.sh
repeats it); without the fix about one child in two died of a heap abort or SIGSEGV.
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


def run_child(extra_env, seconds, seed):
    env = dict(os.environ, **extra_env)
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
        rnd = random.Random(seed)
        sent = 0
        end = time.monotonic() + seconds
        while time.monotonic() < end and p.poll() is None:
            time.sleep(rnd.uniform(0.0005, 0.003))
            p.send_signal(signal.SIGUSR1)
            sent += 1
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        start = time.monotonic()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err, sent, time.monotonic() - start


# The default oneDNN ISA, and oneDNN limited to AVX2 (the kernels an AVX2-only CPU such as AMD
# Zen 3 runs, where the JIT GEMM moves rsp; the AVX-512 path mostly runs brgemm kernels instead).
CASES = [("best", {})]
if cpu_has_avx2():
    CASES.append(("avx2", {"ONEDNN_MAX_CPU_ISA": "AVX2", "SPORE_CPU_ISA": "avx2"}))


@pytest.mark.parametrize("name,extra_env", CASES, ids=[c[0] for c in CASES])
def test_signals_during_gil_free_calls_leave_the_heap_intact(name, extra_env):
    seconds = float(os.environ.get("SPORE_SIGNAL_TEST_SECONDS", "1.5"))
    for child in range(2):
        rc, out, err, sent, ended_in = run_child(extra_env, seconds, seed=child)
        what = f"child {child} ({name}): exit {rc}, {sent} SIGUSR1 sent\nstdout: {out}\nstderr tail: {err[-2000:]}"
        assert "mismatch" not in out, what
        # Python ends an unhandled KeyboardInterrupt by re-raising SIGINT with the default action:
        # -SIGINT is a clean exit; a heap abort is -SIGABRT, a stack or heap smash often -SIGSEGV.
        assert rc == -signal.SIGINT, what
        assert "KeyboardInterrupt" in err, what
        assert "interrupted after" in out, what
        calls = int(out.split("interrupted after ")[1].split()[0])
        handled = int(out.split(" calls, ")[1].split()[0])
        assert calls > 0 and handled > 0, what  # the loop ran, and signals reached the handler
        assert ended_in < 10, what  # promptly


@pytest.mark.parametrize("name,extra_env", CASES, ids=[c[0] for c in CASES])
def test_ctrl_c_interrupts_a_loop_of_long_calls(name, extra_env):
    """SIGINT during a loop of GIL-free matmuls ends the program with KeyboardInterrupt, promptly,
    and with Python's clean SIGINT exit (moved here from test_two_runtimes.py: the case issue 25
    saw die of a heap abort in 6 runs of 8 on an AVX2-only CPU)."""
    code = ("import numpy as np, spore as ms, sys\n"
            "a = ms.Tensor(np.ones((256, 256), np.float32))\n"
            "print('ready', flush=True)\n"
            "while True:\n"
            "    a = ms.ops.matmul(a, a) * (1.0 / 256)\n")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(os.environ, **extra_env))
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        start = time.monotonic()
        _, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "KeyboardInterrupt" in err and p.returncode == -signal.SIGINT, (p.returncode, err[-2000:])
    assert time.monotonic() - start < 10


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
    with pthread_exit ("FATAL: exception not rethrown", or SIGSEGV) in every run before."""
    for child in range(3):
        p = subprocess.Popen([sys.executable, "-c", DATASET_CHILD], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        try:
            assert p.stdout.readline().strip() == "ready"
            time.sleep(0.2 + 0.1 * child)
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        assert "KeyboardInterrupt" in err and p.returncode == -signal.SIGINT, (child, p.returncode, err[-2000:])
