"""mindspore.dataset under Spore: GeneratorDataset over Python sources with map (Python callables,
rows kept in order whatever num_parallel_workers), shuffle, batch, repeat, and tuple/dict
iterators, on the C++ pipeline (NOTE [Pipeline determinism], NOTE [Pipeline errors]).

Values must carry a dtype: a map or generator that returns a bare Python number gets MindSpore's
"Failed to create tensor from numpy array, data type is unknown", with the stage named. A Python
exception raised inside a source or map function reaches the caller as itself, with a note
naming the stage and the row."""
from .. import _spore
from .._spore import Tensor
from . import config
from .samplers import DistributedSampler


class _Iterator:
    def __init__(self, native, names, numpy, as_dict):
        self._it, self._names, self._numpy, self._dict = native, names, numpy, as_dict

    def __iter__(self):
        return self

    def __next__(self):
        row = self._it.next(self._numpy)
        if row is None:
            raise StopIteration
        return dict(zip(self._names, row)) if self._dict else row


class Dataset:
    def __init__(self, native):
        self._native = native

    # ---- stages ----
    def map(self, operations=None, input_columns=None, output_columns=None, column_order=None,
            num_parallel_workers=None, python_multiprocessing=False, cache=None, callbacks=None, **kwargs):
        ops = operations if isinstance(operations, (list, tuple)) else [operations]
        if not ops or not all(callable(f) for f in ops):
            raise TypeError("map: operations must be a callable or a list of callables")
        cols = self.get_col_names()
        ins = [input_columns] if isinstance(input_columns, str) else list(input_columns or cols[:1])
        outs = [output_columns] if isinstance(output_columns, str) else list(output_columns or [])

        def chained(*values):
            for f in ops:
                values = f(*values)
                if not isinstance(values, tuple):
                    values = (values,)
            return values

        d = Dataset(self._native.map(chained, ins, outs, int(num_parallel_workers or 1)))
        return d.project(column_order) if column_order else d

    def shuffle(self, buffer_size):
        if not isinstance(buffer_size, int) or buffer_size < 2:
            raise ValueError(f"shuffle: buffer_size must be an int of at least 2, got {buffer_size!r}")
        return Dataset(self._native.shuffle(buffer_size, config.get_seed()))

    def batch(self, batch_size, drop_remainder=False, num_parallel_workers=None, **kwargs):
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch: batch_size must be a positive int, got {batch_size!r}")
        return Dataset(self._native.batch(batch_size, bool(drop_remainder)))

    def repeat(self, count=None):
        return Dataset(self._native.repeat(-1 if count is None else int(count)))

    def project(self, columns):
        return Dataset(self._native.project([columns] if isinstance(columns, str) else list(columns)))

    # ---- iteration ----
    def create_tuple_iterator(self, columns=None, num_epochs=-1, output_numpy=False, do_copy=True):
        d = self.project(columns) if columns else self
        return _Iterator(d._native.create_tuple_iterator(), d.get_col_names(), output_numpy, False)

    def create_dict_iterator(self, num_epochs=-1, output_numpy=False, do_copy=True):
        return _Iterator(self._native.create_tuple_iterator(), self.get_col_names(), output_numpy, True)

    def __iter__(self):
        return self.create_tuple_iterator()

    def get_dataset_size(self):
        if getattr(self, "_rows", None) is not None:  # a shard: counting a pass would use up an epoch
            return self._rows
        n = self._native.get_dataset_size()
        if n < 0:  # a generator: count one pass, as MindSpore does
            n = sum(1 for _ in self.create_tuple_iterator(output_numpy=True))
        return n

    def get_col_names(self):
        return list(self._native.column_names)

    def __repr__(self):
        return f"Dataset({self._native.describe()}, columns={self.get_col_names()})"


def _shard_sampler(sampler, num_shards, shard_id, shuffle):
    """The DistributedSampler that sampler= or num_shards=/shard_id= ask for, or None."""
    if sampler is not None:
        if num_shards is not None or shard_id is not None:
            raise ValueError("GeneratorDataset: give sampler or num_shards/shard_id, not both")
        if not isinstance(sampler, DistributedSampler):
            raise NotImplementedError(f"GeneratorDataset: only DistributedSampler is supported as sampler, "
                                      f"got {type(sampler).__name__}")
        return sampler
    if num_shards is None and shard_id is None:
        return None
    if num_shards is None or shard_id is None:
        raise ValueError("GeneratorDataset: num_shards and shard_id go together (e.g. num_shards=get_group_size(), "
                         "shard_id=get_rank())")
    return DistributedSampler(num_shards, shard_id, shuffle=True if shuffle is None else bool(shuffle))


class GeneratorDataset(Dataset):
    """Rows from a Python source: a generator function (called afresh for each pass), an iterable,
    or a random-access object with __getitem__ and __len__ (shuffled unless shuffle=False, as in
    MindSpore). Each row is a tuple of NumPy arrays (or Tensors), one per column."""

    def __init__(self, source, column_names=None, column_types=None, schema=None, num_samples=None,
                 num_parallel_workers=1, shuffle=None, sampler=None, num_shards=None, shard_id=None,
                 python_multiprocessing=True, max_rowsize=6):
        if column_names is None:
            raise ValueError("GeneratorDataset: give column_names (schemas are not supported)")
        names = [column_names] if isinstance(column_names, str) else list(column_names)
        random_access = hasattr(source, "__getitem__") and hasattr(source, "__len__")
        sampler = _shard_sampler(sampler, num_shards, shard_id, shuffle)
        if sampler is not None:
            if not random_access:
                raise ValueError("GeneratorDataset: a sampler or num_shards needs a random-access source "
                                 "(__getitem__ and __len__), since each shard picks rows by index")
            native, rows = sampler._dataset(source, len(source), names)
            super().__init__(native)
            self._rows = rows
            return
        if random_access:
            native = _spore.data.random_access(source, len(source), names)
            if shuffle is None or shuffle:
                native = native.shuffle(max(len(source), 2), config.get_seed())
        else:
            if shuffle:
                raise ValueError("GeneratorDataset: shuffle=True needs a random-access source "
                                 "(__getitem__ and __len__); use .shuffle(buffer_size) for a generator")
            if callable(source) and not hasattr(source, "__next__"):
                native = _spore.data.sequential(lambda: iter(source()), names)
            elif hasattr(source, "__iter__"):
                native = _spore.data.sequential(lambda: iter(source), names)
            else:
                raise TypeError(f"GeneratorDataset: source must be a generator function, an iterable or a "
                                f"random-access object, got {type(source).__name__}")
        super().__init__(native)


__all__ = ["GeneratorDataset", "Dataset", "DistributedSampler", "config"]
