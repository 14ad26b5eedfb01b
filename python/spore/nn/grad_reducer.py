"""nn.DistributedGradReducer: the gradients of every rank summed (or averaged) over the world, in
buckets of about 25 MiB (spore::dist::GradBuckets; NOTE [Distributed training in Python]).

Used as in MindSpore: grads = grad_reducer(grads) between value_and_grad and the optimizer. When
value_and_grad differentiates exactly this reducer's parameters (weights=optimizer.parameters,
grad_position=None), it starts each bucket's all-reduce during backward, as soon as the bucket's
gradients are final, and the reducer then only waits: communication hides behind backward. Any
other gradients are reduced when the reducer is called. Inside ms.jit the reducer's all-reduces
are graph nodes, one per bucket (NOTE [Data parallelism in graph mode])."""
from .. import _spore
from .. import parallel_context
from .cell import Cell

_DEFAULT_BUCKET_BYTES = 25 << 20


class _InFlight(tuple):
    """This rank's own gradients whose all-reduces value_and_grad started; `_tag` names the
    reducer and its step."""


class DistributedGradReducer(Cell):
    """parameters: the optimizer's parameters, in its order; mean: divide the sum by degree
    (default: the auto-parallel context's gradients_mean); degree: the divisor (default: the number
    of ranks). Spore's additions: bucket_bytes, and in_rank_order=True for sums whose bits do not
    depend on MPI's reduction tree. Rank 0's parameter values are copied to every rank when the
    reducer is made (PyTorch's DDP does the same; MindSpore relies on equal seeds)."""

    def __init__(self, parameters, mean=None, degree=None, fusion_type=1, group=None,
                 bucket_bytes=_DEFAULT_BUCKET_BYTES, in_rank_order=False):
        super().__init__()
        from ..communication import management
        management._check_group(group, "DistributedGradReducer")
        params = list(parameters)
        if not params:
            raise ValueError("DistributedGradReducer: the parameter list is empty; pass optimizer.parameters")
        for i, p in enumerate(params):
            if not isinstance(p, _spore.Parameter):
                raise TypeError(f"DistributedGradReducer: item {i} is a {type(p).__name__}, not a Parameter; "
                                f"pass optimizer.parameters")
        dist = management._native()
        if not dist.is_initialized():
            raise ValueError("DistributedGradReducer: the communication group is not initialised; call "
                             "spore.communication.init() first (and start the script with mpirun or spore launch)")
        size = dist.get_group_size()
        if mean is None:
            mean = parallel_context.get_auto_parallel_context("gradients_mean")
        if degree is None:
            degree = size
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ValueError(f"DistributedGradReducer: degree must be a positive int, got {degree!r}")
        if not isinstance(bucket_bytes, int) or bucket_bytes < 1:
            raise ValueError(f"DistributedGradReducer: bucket_bytes must be a positive int, got {bucket_bytes!r}")
        native_mean = bool(mean) and degree == size
        object.__setattr__(self, "_parameters", params)
        object.__setattr__(self, "_scale", 1.0 / degree if mean and not native_mean else None)
        object.__setattr__(self, "_reducer", dist.GradReducer(params, native_mean, bucket_bytes, in_rank_order))
        object.__setattr__(self, "_step", 0)
        self._reducer.broadcast_parameters()
        parallel_context._register_reducer(self)

    def _value_and_grad(self, inner, weights, tensors):
        """Called by value_and_grad: the value and this rank's gradients, the buckets in flight."""
        object.__setattr__(self, "_step", self._step + 1)
        value, _, grads = self._reducer.value_and_grad(inner, weights)(tensors)
        out = _InFlight(grads)
        out._tag = (self, self._step)
        return value, out

    def construct(self, grads):
        tag = getattr(grads, "_tag", None)
        if tag is not None and tag[0] is self and tag[1] == self._step and self._reducer.pending:
            out = self._reducer.finish()
        else:
            out = self._reducer.reduce(list(grads))
        if self._scale is not None:
            out = [g * self._scale for g in out]
        return tuple(out)

    def __call__(self, grads):
        return self.construct(grads)
