"""The collective primitives in MindSpore's spelling (mindspore.ops.AllReduce, AllGather,
Broadcast, ReduceOp) over spore::dist's world group (NOTE [Distributed training in Python]).
They are registry ops (NOTE [Collective ops]): inside a jit-compiled function they become graph
nodes, and gradients flow through them. Call spore.communication.init() first."""
from .. import _spore


class ReduceOp:
    SUM = "sum"
    MAX = "max"
    # MindSpore also has MIN and PROD; Spore's collectives reduce by sum, mean and max.


def _dist(who, group):
    from ..communication import management
    management._check_group(group, who)
    dist = management._native()
    if not dist.is_initialized():
        raise ValueError(f"{who}: the communication group is not initialised; call spore.communication.init() first")
    return dist


class AllReduce:
    """x reduced over every rank (op ReduceOp.SUM or ReduceOp.MAX); every rank gets the result."""

    def __init__(self, op=ReduceOp.SUM, group=None):
        if op not in (ReduceOp.SUM, ReduceOp.MAX):
            raise _spore.UnsupportedError(f"AllReduce: op must be ReduceOp.SUM or ReduceOp.MAX, got {op!r}")
        self.op, self.group = op, group

    def __call__(self, x):
        return _dist("AllReduce", self.group).all_reduce(x, self.op)


class AllGather:
    """Every rank's x concatenated along axis 0, in rank order."""

    def __init__(self, group=None):
        self.group = group

    def __call__(self, x):
        return _dist("AllGather", self.group).all_gather(x)


class Broadcast:
    """root_rank's tensors on every rank; called with a tuple of tensors, returns a tuple."""

    def __init__(self, root_rank, group=None):
        if isinstance(root_rank, bool) or not isinstance(root_rank, int) or root_rank < 0:
            raise ValueError(f"Broadcast: root_rank must be a non-negative int, got {root_rank!r}")
        self.root_rank, self.group = root_rank, group

    def __call__(self, x):
        dist = _dist("Broadcast", self.group)
        return tuple(dist.broadcast(t, self.root_rank) for t in x)


__all__ = ["ReduceOp", "AllReduce", "AllGather", "Broadcast"]
