"""Python threads around GIL-free C++ calls (issue 25): a call that runs with the GIL released holds
its own references to what it uses, so another thread cannot free it underneath. Run by ctest as
`python.threads` (label concurrency; scripts/stress-tests.sh repeats it). Each case runs in a child
process, so a crash is a failed test with its exit status, not a dead pytest."""
import os
import signal
import subprocess
import sys

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "fixtures", "ir", "dense_relu_v2.spore")

REBUILD_CHILD = r"""
import sys, threading, time
import numpy as np
import spore_lite as mslite

path = sys.argv[1]
m = mslite.Model()
m.build_from_file(path, mslite.ModelType.SPORE, mslite.Context())
x = np.random.default_rng(0).standard_normal([e if e >= 0 else 4 for e in m.get_inputs()[0].shape]).astype(np.float32)
want = m.predict([x])[0].get_data_to_numpy().copy()
stop = time.monotonic() + float(sys.argv[2])
errors, counts = [], [0, 0]

def predict():
    try:
        while time.monotonic() < stop:
            got = m.predict([x])[0].get_data_to_numpy()
            if not np.array_equal(got, want):
                errors.append("a prediction changed while the model was rebuilt")
                return
            counts[0] += 1
    except Exception as e:
        errors.append(repr(e))

def rebuild():
    try:
        while time.monotonic() < stop:
            m.build_from_file(path, mslite.ModelType.SPORE, mslite.Context())
            m.get_outputs()
            counts[1] += 1
    except Exception as e:
        errors.append(repr(e))

threads = [threading.Thread(target=predict) for _ in range(2)] + [threading.Thread(target=rebuild)]
for t in threads: t.start()
for t in threads: t.join()
print("predictions", counts[0], "rebuilds", counts[1], "errors", errors, flush=True)
sys.exit(1 if errors or not all(counts) else 0)
"""


def test_predict_while_another_thread_rebuilds_the_same_model():
    """spore_lite's predict releases the GIL; a rebuild of the same Model on another thread used to
    free the model under the running predict. Now each call holds the built model it uses and the
    model's lock (NOTE [Python modules], lite_module.cc)."""
    r = subprocess.run([sys.executable, "-c", REBUILD_CHILD, FIXTURE, "1.0"], capture_output=True, text=True,
                       timeout=120)
    status = f"exit {r.returncode}" + (f" ({signal.Signals(-r.returncode).name})" if r.returncode < 0 else "")
    assert r.returncode == 0, f"{status} (SIGSEGV in 3 runs of 3 before)\n{r.stdout}\n{r.stderr[-2000:]}"
