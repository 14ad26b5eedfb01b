"""MindSpore's data-parallel spelling without a launcher (NOTE [Distributed training in Python]):
the auto-parallel context, the dataset shards, and the errors that say what to do. Training under
mpirun is tests/python/test_data_parallel_mpirun.py."""
import numpy as np
import pytest

import spore as ms
import spore.dataset as ds
from spore import nn
from spore.communication import get_group_size, get_rank, init

needs_mpi = pytest.mark.skipif(not ms._spore.dist.available, reason="this Spore was built without MPI")


class Rows:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return (np.array([i], np.int64),)

    def __len__(self):
        return self.n


def shard_rows(num_shards, shard_id, n, shuffle=True):
    d = ds.GeneratorDataset(Rows(n), ["i"], shuffle=shuffle, num_shards=num_shards, shard_id=shard_id)
    return d, [int(r[0][0]) for r in d.create_tuple_iterator(output_numpy=True)]


def test_before_init_the_world_is_one_process():
    assert get_rank() == 0 and get_group_size() == 1
    assert ms.get_auto_parallel_context("device_num") == 1


@needs_mpi
def test_init_without_a_launcher_names_the_spore_launch_line():
    with pytest.raises(ValueError, match=r"no launcher environment.*spore launch -n 2 --"):
        init()
    with pytest.raises(ValueError, match="backend_name"):
        init("gloo")


def test_auto_parallel_context_round_trip_and_refusals():
    try:
        ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
        assert ms.get_auto_parallel_context("parallel_mode") == "data_parallel"
        assert ms.get_auto_parallel_context("gradients_mean") is True
        with pytest.raises(ValueError, match="unknown option"):
            ms.set_auto_parallel_context(gradient_mean=True)
        with pytest.raises(ms.UnsupportedError, match="model parallelism"):
            ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.SEMI_AUTO_PARALLEL)
        with pytest.raises(TypeError, match="gradients_mean"):
            ms.set_auto_parallel_context(gradients_mean=1)
    finally:
        ms.reset_auto_parallel_context()
    assert ms.get_auto_parallel_context("parallel_mode") == "stand_alone"


@needs_mpi
def test_grad_reducer_before_init_says_to_call_init():
    net = nn.Dense(3, 2)
    with pytest.raises(ValueError, match=r"communication.init\(\)"):
        nn.DistributedGradReducer(net.trainable_params())


@needs_mpi
def test_shards_are_disjoint_cover_the_rows_and_reshuffle_each_epoch():
    n = 23  # uneven: 12 rows per shard, one padded from the permutation's start
    d0, a = shard_rows(2, 0, n)
    d1, b = shard_rows(2, 1, n)
    assert len(a) == len(b) == 12 == d0.get_dataset_size()
    assert set(a) | set(b) == set(range(n))
    assert len(set(a) & set(b)) == 1  # only the padded row repeats
    assert a != sorted(a)  # shuffled
    _, a2 = shard_rows(2, 0, n)
    assert a2 == a  # the same seed and epoch give the same shard
    second = [int(r[0][0]) for r in d0.create_tuple_iterator(output_numpy=True)]
    assert second != a and len(second) == 12  # the next pass is the next epoch
    _, whole = shard_rows(1, 0, n, shuffle=False)
    assert whole == list(range(n))


@needs_mpi
def test_shard_arguments_are_checked():
    with pytest.raises(ValueError, match="go together"):
        ds.GeneratorDataset(Rows(4), ["i"], num_shards=2)
    with pytest.raises(ValueError, match="shard_id"):
        ds.GeneratorDataset(Rows(4), ["i"], num_shards=2, shard_id=2)
    with pytest.raises(ValueError, match="random-access"):
        ds.GeneratorDataset(lambda: iter([(np.zeros(1, np.float32),)]), ["x"], num_shards=2, shard_id=0)
    with pytest.raises(ValueError, match="not both"):
        ds.GeneratorDataset(Rows(4), ["i"], sampler=ds.DistributedSampler(2, 0), num_shards=2, shard_id=0)
