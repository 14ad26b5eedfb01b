"""Spore's framework in MindSpore's spelling: ``import spore as ms`` runs code written for
``import mindspore as ms`` (tensors, ops, nn.Cell, value_and_grad, optimizers, datasets,
checkpoints, jit, export). The Lite runtime is the separate package ``spore_lite``.

NOTE [Python modules] in docs/design.md says how it is built and why.
"""
import os as _os
# NOTE [Passive OpenMP in the CLI]: oneDNN's float32 GEMMs and convolutions run on libgomp, which
# reads its wait policy once, when the extension below loads it; unless the user chose one, its
# idle workers sleep instead of spinning against Spore's own pool and the machine's other work.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "passive"
from . import _spore  # noqa: E402
from ._spore import (Tensor, Parameter, dtype, SporeError, ShapeError, DTypeError, DeviceError,  # noqa: E402
                     SporeIndexError, SporeValueError, SporeIOError, FormatError, VersionError,
                     UnsupportedError, InternalError)
from . import _tensor_py  # noqa: F401  (Tensor's Python-side methods: repr, ...)
from .context import (set_context, get_context, PYNATIVE_MODE, GRAPH_MODE, set_seed, get_seed)  # noqa: E402
from .parallel_context import (ParallelMode, set_auto_parallel_context, get_auto_parallel_context,  # noqa: E402
                               reset_auto_parallel_context)

__version__ = _spore._framework_version()

# dtypes under MindSpore's names (mindspore.float32, ...).
bool_ = dtype.bool_
int8 = dtype.int8
uint8 = dtype.uint8
int32 = dtype.int32
int64 = dtype.int64
float16 = dtype.float16
bfloat16 = dtype.bfloat16
float32 = dtype.float32
float64 = dtype.float64
half = float16
single = float32
double = float64
float_ = float32
int_ = int64

from . import ops  # noqa: E402
from . import nn  # noqa: E402
from . import dataset  # noqa: E402
from . import communication  # noqa: E402
from .autograd import value_and_grad, grad, no_grad  # noqa: E402
from .jit import jit  # noqa: E402
from .serialization import save_checkpoint, load_checkpoint, load_param_into_net, export  # noqa: E402

ParameterTuple = tuple  # MindSpore's ParameterTuple(net.trainable_params()) is a tuple of Parameters here

__all__ = ["Tensor", "Parameter", "dtype", "set_context", "get_context", "PYNATIVE_MODE", "GRAPH_MODE",
           "ops", "nn", "dataset", "value_and_grad", "grad", "jit", "save_checkpoint", "load_checkpoint",
           "load_param_into_net", "export", "SporeError", "bool_", "int8", "uint8", "int32", "int64",
           "float16", "bfloat16", "float32", "float64", "set_seed", "ParallelMode", "set_auto_parallel_context",
           "get_auto_parallel_context", "reset_auto_parallel_context", "communication"]
