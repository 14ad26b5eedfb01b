"""Spore Lite for Python in MindSpore Lite's spelling (``import spore_lite as mslite``): Context,
Model.build_from_file(path, ModelType.MINDIR, context), predict. A runtime of its own: this package
never imports spore, and its extension links the Lite library alone (NOTE [Python modules]), so
the framework and Lite can share a process without symbol clashes."""
import os as _os
# NOTE [Passive OpenMP in the CLI]: oneDNN's float32 GEMMs and convolutions run on libgomp, which
# reads its wait policy once, when the extension below loads it; unless the user chose one, its
# idle workers sleep instead of spinning against Spore's own pool and the machine's other work.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["OMP_WAIT_POLICY"] = "passive"
import numpy as np  # noqa: E402

from . import _spore_lite  # noqa: E402
from ._spore_lite import (Tensor, ModelType, DataType, TensorInfo, SporeError, ShapeError, DTypeError,  # noqa: E402
                          DeviceError, SporeValueError, FormatError, VersionError, UnsupportedError,
                          SporeIOError, readable_ir_versions)

_NUMPY = {DataType.BOOL: np.bool_, DataType.INT8: np.int8, DataType.UINT8: np.uint8, DataType.INT32: np.int32,
          DataType.INT64: np.int64, DataType.FLOAT16: np.float16, DataType.FLOAT32: np.float32,
          DataType.FLOAT64: np.float64, DataType.BFLOAT16: np.float32}


class _DeviceInfo:
    def __init__(self):
        self.device_id = 0
        self.thread_num = 0
        self.precision_mode = "enforce_fp32"


class Context:
    """Targets in order of preference ("cpu", "gpu"/"cuda", ...; the first present is used),
    cpu.thread_num (0: one per core)."""

    def __init__(self):
        self.target = ["cpu"]
        self.cpu = _DeviceInfo()
        self.gpu = _DeviceInfo()
        self.ascend = _DeviceInfo()

    def _native(self):
        c = _spore_lite._Context()
        targets = [self.target] if isinstance(self.target, str) else list(self.target)
        c.targets = ["cuda" if t.lower() == "gpu" else t.lower() for t in targets]
        c.num_threads = int(self.cpu.thread_num or 0)
        return c


class Model:
    def __init__(self):
        self._m = _spore_lite._Model()

    def build_from_file(self, model_path, model_type, context=None, config_path="", config_dict=None):
        if not isinstance(model_type, ModelType):
            raise TypeError(f"build_from_file: model_type must be a spore_lite.ModelType, got {model_type!r}")
        self._m.build_from_file(str(model_path), model_type, (context or Context())._native())

    def get_inputs(self):
        """Zero tensors of the inputs' shapes to fill with set_data_from_numpy (symbolic extents: 1)."""
        return [Tensor(np.zeros([e if e >= 0 else 1 for e in i.shape], _NUMPY[i.dtype])) for i in self._m.input_infos()]

    def get_outputs(self):
        return self._m.output_infos()

    def resize(self, inputs, dims):
        names = [i.name for i in self._m.input_infos()]
        self._m.resize({n: list(d) for n, d in zip(names, dims)})

    def predict(self, inputs, outputs=None):
        """Inputs in order (spore_lite.Tensor, NumPy arrays, or spore.Tensor through NumPy);
        returns spore_lite.Tensor outputs (get_data_to_numpy() reads them)."""
        if not isinstance(inputs, (list, tuple)):
            raise TypeError("predict: inputs must be a list of tensors")
        return self._m.predict(inputs)

    @property
    def target(self):
        return self._m.target


__all__ = ["Context", "Model", "ModelType", "Tensor", "DataType", "SporeError", "readable_ir_versions"]
