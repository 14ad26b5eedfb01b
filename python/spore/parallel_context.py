"""set_auto_parallel_context / get_auto_parallel_context / ParallelMode in MindSpore's spelling
(NOTE [Distributed training in Python] in docs/design.md). Spore implements data parallelism
only: the same network on every rank, each rank a shard of every batch, gradients all-reduced
(nn.DistributedGradReducer; nn.TrainOneStepCell adds one by itself in DATA_PARALLEL mode)."""
import weakref

from . import _spore


class ParallelMode:
    STAND_ALONE = "stand_alone"
    DATA_PARALLEL = "data_parallel"
    HYBRID_PARALLEL = "hybrid_parallel"
    SEMI_AUTO_PARALLEL = "semi_auto_parallel"
    AUTO_PARALLEL = "auto_parallel"
    MODE_LIST = [STAND_ALONE, DATA_PARALLEL, HYBRID_PARALLEL, SEMI_AUTO_PARALLEL, AUTO_PARALLEL]


_DEFAULTS = {"parallel_mode": ParallelMode.STAND_ALONE, "gradients_mean": False, "device_num": 1,
             "global_rank": 0, "parameter_broadcast": False, "gradient_fp32_sync": True,
             "loss_repeated_mean": True, "full_batch": False, "enable_parallel_optimizer": False,
             "search_mode": "dynamic_programming", "comm_fusion": None, "dataset_strategy": "data_parallel",
             "strategy_ckpt_load_file": "", "strategy_ckpt_save_file": "", "auto_parallel_search_mode": None,
             "all_reduce_fusion_config": None, "pipeline_stages": 1, "grad_accumulation_step": 1}
# Options that only shape model-parallel plans or Ascend graph compilation: kept, no effect here.
_context = dict(_DEFAULTS)
_given = set()  # the keys set explicitly (device_num and global_rank otherwise come from the job)


def set_auto_parallel_context(**kwargs):
    """parallel_mode: STAND_ALONE or DATA_PARALLEL (the model-parallel modes raise
    UnsupportedError); gradients_mean: average rather than sum the gradients; device_num /
    global_rank: when given, must match the launched job; the other MindSpore options are
    accepted and kept. Unknown keywords raise ValueError."""
    unknown = set(kwargs) - set(_DEFAULTS)
    if unknown:
        raise ValueError(f"set_auto_parallel_context: unknown option(s) {sorted(unknown)}")
    mode = kwargs.get("parallel_mode")
    if mode is not None:
        if mode not in ParallelMode.MODE_LIST:
            raise ValueError(f"set_auto_parallel_context: parallel_mode must be one of {ParallelMode.MODE_LIST}, "
                             f"got {mode!r}")
        if mode not in (ParallelMode.STAND_ALONE, ParallelMode.DATA_PARALLEL):
            raise _spore.UnsupportedError(f"set_auto_parallel_context: parallel_mode={mode!r} (model parallelism) "
                                          f"is not supported; Spore trains in DATA_PARALLEL or STAND_ALONE mode")
    if "gradients_mean" in kwargs and not isinstance(kwargs["gradients_mean"], bool):
        raise TypeError(f"set_auto_parallel_context: gradients_mean must be a bool, got {kwargs['gradients_mean']!r}")
    for key in ("device_num", "global_rank"):
        if key in kwargs and (isinstance(kwargs[key], bool) or not isinstance(kwargs[key], int) or kwargs[key] < 0):
            raise ValueError(f"set_auto_parallel_context: {key} must be a non-negative int, got {kwargs[key]!r}")
    _context.update(kwargs)
    _given.update(kwargs)


def get_auto_parallel_context(attr_key):
    if attr_key not in _context:
        raise ValueError(f"get_auto_parallel_context: unknown key {attr_key!r}")
    if attr_key == "device_num" and "device_num" not in _given:
        from .communication import get_group_size
        return get_group_size()
    if attr_key == "global_rank" and "global_rank" not in _given:
        from .communication import get_rank
        return get_rank()
    return _context[attr_key]


def reset_auto_parallel_context():
    _context.clear()
    _context.update(_DEFAULTS)
    _given.clear()


def data_parallel():
    return _context["parallel_mode"] == ParallelMode.DATA_PARALLEL


# The live reducers, so that value_and_grad over exactly a reducer's parameters can start its
# all-reduces during backward (autograd.py) and hand the reducer gradients already in flight.
_reducers = weakref.WeakValueDictionary()


def _register_reducer(reducer):
    _reducers[id(reducer)] = reducer


def _reducer_for(weights):
    for r in list(_reducers.values()):
        ps = r._parameters
        if len(ps) == len(weights) and all(a._same_as(b) for a, b in zip(ps, weights)):
            return r
    return None
