"""save_checkpoint / load_checkpoint / load_param_into_net and export, in MindSpore's spelling.

A checkpoint is Spore's (NOTE [Checkpoint format]): a safetensors file under the name given
(".ckpt" as MindSpore's), one tensor per parameter under its dotted name, so Python's safetensors
reads it too. save_checkpoint(..., format="mindspore") writes MindSpore's own .ckpt protobuf
instead, and load_checkpoint reads either, by content (NOTE [MindSpore checkpoints]). export writes Spore IR (NOTE [Model IR]); file_format "MINDIR" names the file
"<file_name>.mindir" as MindSpore does, and spore_lite loads it with ModelType.MINDIR."""
import os

import numpy as np

from . import _spore
from ._spore import Parameter, Tensor, ShapeError, DTypeError, UnsupportedError
from .nn.cell import Cell


def _named_tensors(save_obj, who):
    if isinstance(save_obj, Cell):
        return [(n, p) for n, p in save_obj.parameters_and_names()]
    if isinstance(save_obj, dict):
        return [(str(k), v if isinstance(v, Tensor) else Tensor(v)) for k, v in save_obj.items()]
    if isinstance(save_obj, (list, tuple)):
        out = []
        for i, item in enumerate(save_obj):
            if not isinstance(item, dict) or "name" not in item or "data" not in item:
                raise TypeError(f"{who}: item {i} of the list must be a dict {{'name': ..., 'data': ...}}")
            d = item["data"]
            out.append((item["name"], d if isinstance(d, Tensor) else Tensor(d)))
        return out
    raise TypeError(f"{who}: save_obj must be a Cell, a list of {{'name', 'data'}} dicts or a dict, "
                    f"got {type(save_obj).__name__}")


def save_checkpoint(save_obj, ckpt_file_name, integrated_save=True, async_save=False, append_dict=None,
                    enc_key=None, enc_mode="AES-GCM", choice_func=None, **kwargs):
    if enc_key is not None:
        raise UnsupportedError("save_checkpoint: encryption is not supported")
    named = _named_tensors(save_obj, "save_checkpoint")
    if choice_func is not None:
        named = [(n, t) for n, t in named if choice_func(n)]
    for k, v in (append_dict or {}).items():
        named.append((str(k), v if isinstance(v, Tensor) else Tensor(np.asarray(v))))
    path = os.fspath(ckpt_file_name)
    if not path.endswith(".ckpt") and not path.endswith(".safetensors"):
        path += ".ckpt"
    fmt = kwargs.get("format", "spore")
    if fmt == "mindspore":  # MindSpore's protobuf, byte-identical to its save_checkpoint
        _spore._save_ms_checkpoint([(n, t) for n, t in named], path)
    elif fmt in ("spore", "safetensors"):
        _spore._save_checkpoint([(n, t) for n, t in named], path, {})
    else:
        raise ValueError(f"save_checkpoint: format must be 'spore' (safetensors) or 'mindspore' (MindSpore's .ckpt), "
                         f"got {fmt!r}")


def _is_mindspore_ckpt(path):
    # A safetensors file starts with its header's length (8 bytes) and then '{'; a MindSpore .ckpt
    # is a protobuf whose first byte is field 1's tag (0x0a). An empty file is neither: safetensors
    # reports it.
    try:
        with open(path, "rb") as f:
            head = f.read(9)
    except OSError:
        return False
    return len(head) > 0 and head[:1] == b"\x0a" and not (len(head) == 9 and head[8:9] == b"{")


def load_checkpoint(ckpt_file_name, net=None, strict_load=False, filter_prefix=None, dec_key=None,
                    dec_mode="AES-GCM", specify_prefix=None, choice_func=None):
    """{name: Parameter} from a checkpoint (any safetensors file); with net, also loaded into it."""
    if dec_key is not None:
        raise UnsupportedError("load_checkpoint: decryption is not supported")
    path = os.fspath(ckpt_file_name)
    if _is_mindspore_ckpt(path):
        tensors = dict(_spore._load_ms_checkpoint(path))
    else:
        tensors, _meta = _spore._load_checkpoint(path)
    out = {}
    prefixes = (filter_prefix,) if isinstance(filter_prefix, str) else tuple(filter_prefix or ())
    for name, t in tensors.items():
        if prefixes and name.startswith(prefixes):
            continue
        if choice_func is not None and not choice_func(name):
            continue
        out[name] = Parameter(t, name=name)
    if net is not None:
        load_param_into_net(net, out, strict_load)
    return out


def load_param_into_net(net, parameter_dict, strict_load=False):
    """Sets net's parameters from parameter_dict by name (NOTE [Loading parameters]): every shape
    and dtype is checked first and nothing changes unless all fit. Returns (param_not_load,
    ckpt_not_load) as MindSpore does; strict_load raises on either instead."""
    if not isinstance(net, Cell):
        raise TypeError(f"load_param_into_net: net must be a Cell, got {type(net).__name__}")
    if not isinstance(parameter_dict, dict):
        raise TypeError(f"load_param_into_net: parameter_dict must be a dict, got {type(parameter_dict).__name__}")
    params = list(net.parameters_and_names())
    names = {n for n, _ in params}
    param_not_load = [n for n, _ in params if n not in parameter_dict]
    ckpt_not_load = sorted(k for k in parameter_dict if k not in names)
    if strict_load and (param_not_load or ckpt_not_load):
        raise ValueError(f"load_param_into_net: missing {param_not_load}, unexpected {ckpt_not_load}")
    plan, shape_errors, dtype_errors = [], [], []
    for n, p in params:
        if n not in parameter_dict:
            continue
        v = parameter_dict[n]
        v = v if isinstance(v, Tensor) else Tensor(v)
        if tuple(v.shape) != tuple(p.shape):
            shape_errors.append(f"'{n}': checkpoint {list(v.shape)}, network {list(p.shape)}")
        elif v.dtype != p.dtype:
            dtype_errors.append(f"'{n}': checkpoint {v.dtype}, network {p.dtype}")
        else:
            plan.append((p, v))
    if shape_errors:
        raise ShapeError("load_param_into_net: shapes differ for " + "; ".join(shape_errors) +
                         ". Nothing was loaded: build the network with the shapes the checkpoint was saved from")
    if dtype_errors:
        raise DTypeError("load_param_into_net: dtypes differ for " + "; ".join(dtype_errors) +
                         ". Nothing was loaded: cast the checkpoint's tensors or build the network in that dtype")
    for p, v in plan:
        p.set_data(v)
    return param_not_load, ckpt_not_load


def export(net, *inputs, file_name, file_format="MINDIR", **kwargs):
    """Traces net on the example inputs and writes the graph with its parameters.
    file_format "MINDIR" (Spore IR under "<file_name>.mindir"), "SPORE" ("<file_name>.spore") or
    "ONNX" ("<file_name>.onnx", op set 17, checked by the ONNX library; spore_lite loads it with
    ModelType.ONNX); kwargs: ir_version (Spore IR only: 1 for an older Lite), dynamic_axes
    {input: {dim: "symbol"}}."""
    fmt = file_format.upper()
    if fmt not in ("MINDIR", "SPORE", "ONNX"):
        raise ValueError(f"export: file_format must be 'MINDIR', 'SPORE' or 'ONNX', got {file_format!r}")
    if not inputs or not all(isinstance(t, Tensor) for t in inputs):
        raise TypeError("export: give the example inputs as Tensors after the network")
    ext = {"MINDIR": ".mindir", "SPORE": ".spore", "ONNX": ".onnx"}[fmt]
    path = os.fspath(file_name)
    if not path.endswith(ext):
        path += ext
    names = list(net.parameters_and_names()) if isinstance(net, Cell) else []
    version = int(kwargs.pop("ir_version", 2))
    dynamic = kwargs.pop("dynamic_axes", {}) or {}
    if kwargs:
        raise ValueError(f"export: unknown option(s) {sorted(kwargs)}")

    def fn(tensors):
        return net(*tensors)

    _spore._export(fn, list(inputs), path, names, version, dynamic, fmt == "ONNX")
    return path
