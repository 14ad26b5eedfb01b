"""spore.dataset.GeneratorDataset: order, workers, shuffle, batch, iterators and errors."""
import threading

import numpy as np
import pytest

from spore import Tensor
from spore.dataset import GeneratorDataset, config


def gen(n=10):
    def g():
        for i in range(n):
            yield np.array([i, i * 10], np.int32), np.array(i * 0.5, np.float32)
    return g


class RandomAccess:
    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        return (np.full((2,), i, np.float32),)

    def __len__(self):
        return self.n


def test_rows_in_order_and_generator_restarts_each_pass():
    ds = GeneratorDataset(gen(), column_names=["a", "b"])
    rows = list(ds.create_tuple_iterator(output_numpy=True))
    assert len(rows) == 10 and rows[3][0].tolist() == [3, 30] and rows[3][1] == 1.5
    assert len(list(ds)) == 10  # a second pass
    assert isinstance(rows[0][0], np.ndarray) and isinstance(next(iter(ds))[0], Tensor)
    assert ds.get_dataset_size() == 10 and ds.get_col_names() == ["a", "b"]


def test_map_with_workers_keeps_order_and_runs_in_parallel_threads():
    threads = set()

    def f(a):
        threads.add(threading.get_ident())
        return (a * 2).astype(np.int32)

    ds = GeneratorDataset(gen(50), column_names=["a", "b"]).map(f, ["a"], num_parallel_workers=3)
    got = [r["a"].tolist() for r in ds.create_dict_iterator(output_numpy=True)]
    assert got == [[2 * i, 20 * i] for i in range(50)]
    assert threading.get_ident() not in threads  # ran on the pipeline's workers


def test_map_chains_operations_and_renames_columns():
    ds = GeneratorDataset(gen(4), column_names=["a", "b"]).map(
        [lambda a: a + 1, lambda a: (a, a * 0)], input_columns=["a"], output_columns=["p", "q"])
    assert ds.get_col_names() == ["p", "q", "b"]
    first = next(ds.create_dict_iterator(output_numpy=True))
    assert first["p"].tolist() == [1, 1] and first["q"].tolist() == [0, 0]


def test_batch_and_drop_remainder():
    ds = GeneratorDataset(gen(10), column_names=["a", "b"])
    assert [r[0].shape for r in ds.batch(4).create_tuple_iterator(output_numpy=True)] == [(4, 2), (4, 2), (2, 2)]
    assert len(list(ds.batch(4, drop_remainder=True))) == 2


def test_random_access_source_shuffles_reproducibly():
    config.set_seed(5)
    a = [r[0][0] for r in GeneratorDataset(RandomAccess(20), ["x"]).create_tuple_iterator(output_numpy=True)]
    b = [r[0][0] for r in GeneratorDataset(RandomAccess(20), ["x"]).create_tuple_iterator(output_numpy=True)]
    assert a == b and sorted(a) == list(range(20)) and a != list(range(20))
    plain = [r[0][0] for r in GeneratorDataset(RandomAccess(5), ["x"], shuffle=False).create_tuple_iterator(
        output_numpy=True)]
    assert plain == [0, 1, 2, 3, 4]
    config.set_seed(0)


def test_an_exception_in_the_generator_arrives_as_itself_with_the_stage():
    def bad():
        yield (np.zeros(2, np.float32),)
        raise ZeroDivisionError("boom in the source")

    it = GeneratorDataset(bad, ["x"]).create_tuple_iterator()
    next(it)
    with pytest.raises(ZeroDivisionError, match="boom in the source") as e:
        next(it)
    notes = " ".join(getattr(e.value, "__notes__", []))
    assert "generator" in notes and "row 1" in notes


def test_an_exception_in_map_names_the_map_stage():
    def f(a):
        raise ValueError("bad value in map")

    ds = GeneratorDataset(gen(3), ["a", "b"]).map(f, ["a"], num_parallel_workers=2)
    with pytest.raises(ValueError, match="bad value in map") as e:
        list(ds)
    assert "map" in " ".join(getattr(e.value, "__notes__", []))


def test_untyped_values_are_refused_with_the_fix():
    ds = GeneratorDataset(lambda: iter([(1.0,)]), ["x"])
    with pytest.raises(TypeError, match="data type is unknown.*explicit"):
        list(ds)
    ds = GeneratorDataset(lambda: iter([(np.zeros(2, np.float32),), (np.zeros(2, np.float64),)]), ["x"])
    with pytest.raises(TypeError, match="float64"):  # a column keeps one dtype
        list(ds)


def test_bad_arguments():
    with pytest.raises(ValueError):
        GeneratorDataset(gen(), column_names=None)
    with pytest.raises(ValueError):
        GeneratorDataset(gen(), ["a", "b"]).batch(0)
    with pytest.raises(TypeError):
        GeneratorDataset(gen(), ["a", "b"]).map("not callable")
    with pytest.raises(TypeError):
        GeneratorDataset(42, ["a"])


def test_leaving_a_pass_early_with_busy_workers_does_not_hang():
    import time

    def slow(a):
        time.sleep(0.002)
        return a

    ds = GeneratorDataset(gen(200), ["a", "b"]).map(slow, ["a"], num_parallel_workers=4)
    for _ in range(3):
        for i, _row in enumerate(ds):
            if i == 5:
                break  # the pass is dropped here, its workers mid-call
    it = iter(ds)
    next(it)
    del it
