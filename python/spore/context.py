"""set_context / get_context in MindSpore's terms over Spore's process-wide context."""
from . import _spore

GRAPH_MODE = 0  # MindSpore's values
PYNATIVE_MODE = 1

_settings = {"device_id": 0, "seed": 0}


def set_context(mode=None, device_target=None, device_id=None, precision_mode=None, **kwargs):
    """MindSpore's set_context: mode (PYNATIVE_MODE, GRAPH_MODE), device_target ("CPU", or
    Spore's "cpu"/"cuda"), device_id, precision_mode ("must_keep_origin_dtype"/"keep_type" or
    "allow_mix_precision"/"allow_mixed"), max_call_depth and other MindSpore options that have no
    meaning here are accepted and ignored; unknown keywords raise ValueError."""
    ignored = {"max_call_depth", "save_graphs", "save_graphs_path", "enable_graph_kernel", "pynative_synchronize",
               "jit_config", "memory_optimize_level", "max_device_memory", "runtime_num_threads"}
    unknown = set(kwargs) - ignored
    if unknown:
        raise ValueError(f"set_context: unknown option(s) {sorted(unknown)}")
    if mode is not None:
        if mode not in (GRAPH_MODE, PYNATIVE_MODE):
            raise ValueError(f"set_context: mode must be GRAPH_MODE (0) or PYNATIVE_MODE (1), got {mode!r}")
        _spore._set_mode(mode)
    if device_id is not None:
        if not isinstance(device_id, int) or device_id < 0:
            raise ValueError(f"set_context: device_id must be a non-negative int, got {device_id!r}")
        _settings["device_id"] = device_id
    if device_target is not None:
        target = str(device_target).lower()
        if target == "gpu":
            target = "cuda"
        if target in ("cuda",) and _settings["device_id"]:
            target = f"cuda:{_settings['device_id']}"
        _spore._set_device(target)
    if precision_mode is not None:
        _spore._set_precision(precision_mode)
    if "runtime_num_threads" in kwargs:
        _spore._set_num_threads(int(kwargs["runtime_num_threads"]))


def get_context(attr_key):
    if attr_key == "mode":
        return _spore._get_mode()
    if attr_key == "device_target":
        dev = _spore._get_device()
        return "CPU" if dev == "cpu" else ("GPU" if dev.startswith("cuda") else dev)
    if attr_key == "device_id":
        return _settings["device_id"]
    if attr_key == "precision_mode":
        return _spore._get_precision()
    raise ValueError(f"get_context: unknown key {attr_key!r}")


def set_seed(seed):
    """The seed the next layers' initialisers and datasets' shuffles start from (MindSpore's
    set_seed). Spore's initialisers are counter-based: a layer built after set_seed(s) gets the
    same weights on every run and thread count."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"set_seed: seed must be a non-negative int, got {seed!r}")
    _settings["seed"] = seed
    _settings["counter"] = 0


def get_seed():
    return _settings["seed"]


def next_seed():
    """A fresh seed for one layer: derived from set_seed's and a counter."""
    n = _settings.get("counter", 0)
    _settings["counter"] = n + 1
    return (_settings["seed"] * 1000003 + n + 1) & 0xFFFFFFFFFFFF
