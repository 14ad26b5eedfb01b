"""Samplers for GeneratorDataset in MindSpore's spelling. DistributedSampler: rank shard_id of
num_shards takes a disjoint, strided shard of one permutation drawn from the dataset seed plus the
epoch (the same on every rank; PyTorch's DistributedSampler), padded by repeating its start when the
size does not divide; each pass over the dataset (a new iterator, or repeat()) is the next epoch
(spore::dist::DistributedSampler; NOTE [Distributed training in Python])."""
from .. import _spore
from . import config


class DistributedSampler:
    def __init__(self, num_shards, shard_id, shuffle=True, num_samples=None, offset=-1):
        if isinstance(num_shards, bool) or not isinstance(num_shards, int) or num_shards < 1:
            raise ValueError(f"DistributedSampler: num_shards must be a positive int, got {num_shards!r}")
        if isinstance(shard_id, bool) or not isinstance(shard_id, int) or not 0 <= shard_id < num_shards:
            raise ValueError(f"DistributedSampler: shard_id must be an int in [0, {num_shards}), got {shard_id!r}")
        if num_samples is not None or offset != -1:
            raise _spore.UnsupportedError("DistributedSampler: num_samples and offset are not supported")
        self.num_shards, self.shard_id, self.shuffle = num_shards, shard_id, bool(shuffle)

    def _dataset(self, source, rows, column_names):
        """The pipeline of this shard's rows of a random-access source."""
        if not _spore.dist.available:
            raise _spore.UnsupportedError(f"DistributedSampler: {_spore.dist.reason}")
        native = _spore.dist.DistributedSampler(rows, self.num_shards, self.shard_id, self.shuffle,
                                                config.get_seed())
        return native.dataset(source, column_names), native.num_samples


__all__ = ["DistributedSampler"]
