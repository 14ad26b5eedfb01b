"""examples/dist/data_parallel_train.py, unchanged, under `mpirun -np 2` against one process on the
combined batch (NOTE [Distributed training in Python]). Run by ctest as dist.python.np2 (labels
python, dist, concurrency) with SPORE_MPIEXEC set; skipped where the build has no MPI."""
import os
import subprocess
import sys

import numpy as np
import pytest

import spore as ms

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "examples", "dist", "data_parallel_train.py")
MPIEXEC = os.environ.get("SPORE_MPIEXEC")
pytestmark = pytest.mark.skipif(not MPIEXEC or not ms._spore.dist.available,
                                reason="needs MPI (SPORE_MPIEXEC and a Spore built with spore_dist)")


def launcher_free_env():
    """This environment without any launcher's rank variables (the MCA settings stay)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("OMPI_COMM_WORLD", "PMIX_", "PMI_")) and k not in ("RANK", "WORLD_SIZE")}


def mpirun(ranks, args, tmp_path):
    cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), sys.executable, SCRIPT, *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240, cwd=tmp_path, env=launcher_free_env())
    assert r.returncode == 0, f"{' '.join(cmd)} failed ({r.returncode}):\n{r.stdout}\n{r.stderr}"
    return r.stdout


# Each rank: the collective primitives on rank-valued tensors, AllReduce compiled by jit (a graph
# node, NOTE [Collective ops]: the second call's result follows its own input), then a
# DistributedGradReducer called inside a jit-compiled function (its buckets reduced by all_reduce
# nodes, NOTE [Data parallelism in graph mode]; a replayed trace would not follow the input).
COLLECTIVES = r"""
import numpy as np
import spore as ms
from spore import nn, ops
from spore.communication import init, get_rank, get_group_size
init()
r, n = get_rank(), get_group_size()
x = ms.Tensor(np.array([r + 1.0, 10.0 * r], np.float32))
s = ops.AllReduce()(x).asnumpy().tolist()
m = ops.AllReduce(ops.ReduceOp.MAX)(x).asnumpy().tolist()
g = ops.AllGather()(ms.Tensor(np.array([[r]], np.int64))).asnumpy().ravel().tolist()
b = ops.Broadcast(n - 1)((x,))[0].asnumpy().tolist()
compiled = ms.jit(lambda t: ops.AllReduce()(t) * 2.0)
compiled(x)
j = compiled(x + 1.0).asnumpy().tolist()
net = nn.Dense(3, 2)
reducer = nn.DistributedGradReducer(net.trainable_params())
step = ms.jit(lambda w, c: reducer((w, c))[0])
red = []
for k in (1.0, 2.0):  # rank r's gradients are k (r + 1) everywhere; their sum over the ranks (gradients_mean
    # is off by default)
    out = step(ms.Tensor(np.full((2, 3), k * (r + 1), np.float32)), ms.Tensor(np.full((2,), k * (r + 1), np.float32)))
    red.append(sorted(set(out.asnumpy().ravel().tolist())))
print(f"rank {r}: sum={s} max={m} gather={g} bcast={b} jit={j} reducer_jit={red}", flush=True)
"""


def params(path):
    return {k: v.asnumpy().astype(np.float64) for k, v in ms.load_checkpoint(str(path)).items()}


def initial_params():
    """The script's network as it starts (same seed, same layers), built here in one process."""
    from spore import nn
    ms.set_seed(1)
    net = nn.SequentialCell([nn.Dense(64, 32), nn.ReLU(), nn.Dense(32, 10)])
    return {k: p.asnumpy().astype(np.float64) for k, p in net.parameters_and_names()}


def max_diff(a, b):
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory):
    """One process, batch 16: the reference; the checkpoint is read here, a world of one."""
    d = tmp_path_factory.mktemp("np1")
    out = mpirun(1, ["--batch", "16", "--out", str(d / "np1.ckpt")], d)
    assert "rank 0/1 epoch 1" in out
    return params(d / "np1.ckpt")


def test_two_ranks_train_the_parameters_of_one_rank_on_the_combined_batch(one_rank, tmp_path):
    out = mpirun(2, ["--batch", "8", "--out", str(tmp_path / "np2.ckpt")], tmp_path)
    assert "rank 0/2 epoch 1" in out and "rank 1/2 epoch 1" in out
    two = params(tmp_path / "np2.ckpt")  # written at world size 2, read by this single process
    moved = max_diff(one_rank, initial_params())
    assert moved > 1e-2, f"training hardly moved the parameters ({moved})"
    diff = max_diff(two, one_rank)
    # float32 reduction order only: each rank averages 8 rows, the single process 16.
    assert diff < 1e-4, f"2 ranks x batch 8 differ from 1 rank x batch 16 by {diff} (training moved {moved})"


def test_train_one_step_cell_reduces_in_data_parallel_mode(one_rank, tmp_path):
    mpirun(2, ["--batch", "8", "--train-one-step", "--out", str(tmp_path / "np2.ckpt")], tmp_path)
    diff = max_diff(params(tmp_path / "np2.ckpt"), one_rank)
    assert diff < 1e-4, f"TrainOneStepCell on 2 ranks differs from 1 rank on the combined batch by {diff}"


def test_collective_primitives_and_the_grad_reducer_compiled(tmp_path):
    script = tmp_path / "collectives.py"
    script.write_text(COLLECTIVES)
    cmd = [MPIEXEC, "--allow-run-as-root", "--oversubscribe", "-np", "2", sys.executable, str(script)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path, env=launcher_free_env())
    assert r.returncode == 0, r.stdout + r.stderr
    n = 2  # the reference, over the ranks r = 0..n-1 that contributed [r + 1, 10 r]
    for rank in range(n):
        expect = (f"rank {rank}: sum={[float(sum(q + 1 for q in range(n))), float(sum(10 * q for q in range(n)))]} "
                  f"max={[float(n), 10.0 * (n - 1)]} gather={list(range(n))} bcast={[float(n), 10.0 * (n - 1)]} "
                  f"jit={[2.0 * sum(q + 2 for q in range(n)), 2.0 * sum(10 * q + 1 for q in range(n))]} "
                  f"reducer_jit={[[k * sum(q + 1 for q in range(n))] for k in (1.0, 2.0)]}")
        assert expect in r.stdout, r.stdout + r.stderr


def test_without_a_launcher_the_script_says_how_to_start_it(tmp_path):
    r = subprocess.run([sys.executable, SCRIPT, "--batch", "8"], capture_output=True, text=True, timeout=120,
                       cwd=tmp_path, env=launcher_free_env())
    assert r.returncode != 0
    assert "no launcher environment" in r.stderr, r.stderr
    assert "spore launch -n 2 --" in r.stderr and "data_parallel_train.py --batch 8" in r.stderr, r.stderr
    assert "InitOptions" not in r.stderr  # C++'s option, which Python does not offer
