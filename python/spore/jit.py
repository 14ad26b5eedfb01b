"""spore.jit: a Python function traced through the C++ tracer into a graph, compiled per input
signature and run as a whole on later calls (NOTE [Tracing], [jit cache] in docs/design.md).

Tensor arguments are the graph's inputs; bool/int/float/str/None arguments are part of the key
(a new value traces again), as MindSpore's constants are; other objects (a Cell passed as self)
are keyed by identity. Tensors the function reads from elsewhere (Parameters) are bound by
reference, so an optimizer's in-place update is seen by the next call. As in MindSpore's graph
mode, Python side effects run only while tracing."""
import functools
import inspect

from . import _spore
from ._spore import Tensor

_objects = {}  # identity key -> object, for non-scalar arguments (kept alive while keyed)


def _encode(v):
    if isinstance(v, Tensor):
        return "t", v
    if v is None:
        return "n", None
    if isinstance(v, (bool, int, float, str)):
        return "s", v
    _objects[id(v)] = v
    return "o", id(v)


def jit(function=None, mode="PSJit", input_signature=None, hash_args=None, jit_config=None, compile_once=False,
        **kwargs):
    def decorate(fn):
        sig = inspect.signature(fn)
        params = list(sig.parameters.values())
        if any(p.kind == p.VAR_KEYWORD for p in params):
            raise NotImplementedError(f"jit: {fn.__qualname__} takes **kwargs, which cannot be traced")
        single = {}

        def rebuild(tensors, statics):
            # statics[0]: the layout, one letter per flattened argument; then the static values.
            layout, rest = statics[0], statics[1:]
            it_t, it_s = iter(tensors), iter(rest)
            values = []
            for kind in layout.split(",")[0]:
                if kind == "t":
                    values.append(next(it_t))
                elif kind == "n":
                    values.append(None)
                elif kind == "s":
                    values.append(next(it_s))
                else:
                    values.append(_objects[next(it_s)])
            return layout, values

        def traced(tensors, statics):
            layout, values = rebuild(tensors, statics)
            out = fn(*values)
            single[layout] = isinstance(out, Tensor)
            return out

        native = _spore._jit(traced, getattr(fn, "__qualname__", "jit"))

        @functools.wraps(fn)
        def wrapper(*args, **kw):
            if _spore._is_tracing():  # inside an outer trace: inline
                return fn(*args, **kw)
            bound = sig.bind(*args, **kw)
            bound.apply_defaults()
            if bound.kwargs:
                raise NotImplementedError(f"jit: keyword-only arguments {sorted(bound.kwargs)} cannot be traced")
            flat = list(bound.args)
            kinds, tensors, statics = [], [], []
            for v in flat:
                k, payload = _encode(v)
                kinds.append(k)
                if k == "t":
                    tensors.append(payload)
                elif k in ("s", "o"):
                    statics.append(payload)
            layout = "".join(kinds) + "," + str(len(flat))
            out = native(tensors, [layout] + statics)
            if single.get(layout, len(out) == 1):
                return out[0]
            return tuple(out)

        wrapper.stats = native
        return wrapper

    if function is not None and callable(function):
        return decorate(function)
    return decorate
