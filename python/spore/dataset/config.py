"""mindspore.dataset.config: the seed shuffles draw from (fixed by default: reproducible)."""
_seed = [0]


def set_seed(seed):
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"set_seed: seed must be a non-negative int, got {seed!r}")
    _seed[0] = seed


def get_seed():
    return _seed[0]
