"""nn.Cell as MindSpore has it: subclass, declare Parameters and sub-Cells in __init__, compute in
construct. Attributes that are Parameters or Cells are found by trainable_params() in the order
they were assigned (depth first, MindSpore's dotted names "0.weight"). Built-in layers are cells
that hold a C++ cell (_native) and delegate to it."""
from collections import OrderedDict

from .. import _spore
from ..context import GRAPH_MODE
from .._spore import Parameter, Tensor


class Cell:
    def __init__(self, auto_prefix=True, flags=None):
        object.__setattr__(self, "_params", OrderedDict())
        object.__setattr__(self, "_cells", OrderedDict())
        object.__setattr__(self, "training", False)
        object.__setattr__(self, "_compute_dtype", None)
        object.__setattr__(self, "_graph_fn", None)
        object.__setattr__(self, "_native", None)

    # ---- attributes: Parameters and Cells are registered in assignment order ----
    def __setattr__(self, name, value):
        params = self.__dict__.get("_params")
        if params is None:
            if isinstance(value, (Parameter, Cell)):
                raise AttributeError(f"{type(self).__name__}: assign Parameters and Cells after calling "
                                     f"super().__init__() in __init__")
            object.__setattr__(self, name, value)
            return
        cells = self.__dict__["_cells"]
        params.pop(name, None)
        cells.pop(name, None)
        if isinstance(value, Parameter):
            params[name] = value
        elif isinstance(value, Cell):
            cells[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        self._params.pop(name, None)
        self._cells.pop(name, None)
        object.__delattr__(self, name)

    def insert_param_to_cell(self, param_name, param, check_name_contain_dot=True):
        if check_name_contain_dot and "." in param_name:
            raise KeyError(f"insert_param_to_cell: the name {param_name!r} may not contain '.'")
        setattr(self, param_name, param)

    def insert_child_to_cell(self, child_name, child_cell):
        setattr(self, child_name, child_cell)

    # ---- calling ----
    def construct(self, *inputs, **kwargs):
        if self._native is not None:
            return self._native(*inputs)
        raise NotImplementedError(f"{type(self).__name__} defines no construct()")

    def __call__(self, *args, **kwargs):
        if self._compute_dtype is not None:
            args = tuple(a.astype(self._compute_dtype)
                         if isinstance(a, Tensor) and a.dtype.is_floating_point and a.dtype != self._compute_dtype
                         else a for a in args)
        # GRAPH_MODE: the forward is traced on first call and compiled (per input signature and
        # training flag), as C++ Cells do; while an outer trace runs, cells run inline.
        if (self._native is None and not kwargs and _spore._get_mode() == GRAPH_MODE
                and not _spore._is_tracing() and all(isinstance(a, Tensor) for a in args)):
            if self._graph_fn is None:
                cell = self

                def traced(tensors, statics):
                    return cell.construct(*tensors)

                object.__setattr__(self, "_graph_fn", _spore._jit(traced, type(self).__name__))
            out = self._graph_fn(list(args), [bool(self.training)])
            return out[0] if len(out) == 1 else tuple(out)
        return self.construct(*args, **kwargs)

    # ---- parameters ----
    def cells_and_names(self, cell=None, name_prefix=""):
        yield name_prefix, self
        for name, c in self._cells.items():
            yield from c.cells_and_names(name_prefix=f"{name_prefix}.{name}" if name_prefix else name)

    def name_cells(self):
        return OrderedDict(self._cells)

    def cells(self):
        return list(self._cells.values())

    def parameters_and_names(self, name_prefix="", expand=True):
        prefix = f"{name_prefix}." if name_prefix else ""
        for name, p in self._params.items():
            full = prefix + name
            p.name = full  # MindSpore names parameters by their path once the network is built
            yield full, p
        if self._native is not None:
            for name, p in self._native.named_parameters():
                p.name = prefix + name
                yield prefix + name, p
        if expand:
            for name, c in self._cells.items():
                yield from c.parameters_and_names(prefix + name)

    def get_parameters(self, expand=True):
        for _, p in self.parameters_and_names(expand=expand):
            yield p

    def trainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if p.requires_grad]

    def untrainable_params(self, recurse=True):
        return [p for p in self.get_parameters(expand=recurse) if not p.requires_grad]

    def parameters_dict(self, recurse=True):
        return OrderedDict(self.parameters_and_names(expand=recurse))

    # ---- modes ----
    def set_train(self, mode=True):
        object.__setattr__(self, "training", bool(mode))
        if self._native is not None:
            self._native.set_train(bool(mode))
        for c in self._cells.values():
            c.set_train(mode)
        return self

    def to_float(self, dst_type):
        """Computes in dst_type: floating inputs are cast on entry; built-in layers also cast their
        parameters where they use them, keeping float32 masters (NOTE [Mixed precision with to_float])."""
        object.__setattr__(self, "_compute_dtype", dst_type)
        if self._native is not None:
            self._native.to_float(dst_type)
        for c in self._cells.values():
            c.to_float(dst_type)
        return self

    def __repr__(self):
        lines = [f"{type(self).__name__}<"]
        for name, c in self._cells.items():
            lines.append(f"  ({name}): " + repr(c).replace("\n", "\n  "))
        lines.append(">")
        return "\n".join(lines) if self._cells else f"{type(self).__name__}<>"


class SequentialCell(Cell):
    """Applies its cells in order; they are named "0", "1", ..."""

    def __init__(self, *args):
        super().__init__()
        cells = args[0] if len(args) == 1 and isinstance(args[0], (list, tuple, OrderedDict)) else args
        if isinstance(cells, OrderedDict):
            items = list(cells.items())
        else:
            items = [(str(i), c) for i, c in enumerate(cells)]
        for name, c in items:
            if not isinstance(c, Cell):
                raise TypeError(f"SequentialCell: item {name} is a {type(c).__name__}, not a Cell")
            setattr(self, name, c)

    def construct(self, x):
        for c in self._cells.values():
            x = c(x)
        return x

    def __getitem__(self, i):
        return list(self._cells.values())[i]

    def __len__(self):
        return len(self._cells)

    def append(self, cell):
        setattr(self, str(len(self._cells)), cell)


class CellList(Cell):
    def __init__(self, args=None):
        super().__init__()
        for c in args or []:
            self.append(c)

    def append(self, cell):
        setattr(self, str(len(self._cells)), cell)

    def __getitem__(self, i):
        return list(self._cells.values())[i]

    def __len__(self):
        return len(self._cells)

    def __iter__(self):
        return iter(self._cells.values())


class WithLossCell(Cell):
    """backbone + loss: construct(data, label) = loss_fn(backbone(data), label)."""

    def __init__(self, backbone, loss_fn):
        super().__init__()
        self._backbone = backbone
        self._loss_fn = loss_fn

    def construct(self, data, label):
        return self._loss_fn(self._backbone(data), label)

    @property
    def backbone_network(self):
        return self._backbone


class TrainOneStepCell(Cell):
    """One training step per call: the loss of network(*inputs), its gradients with respect to the
    optimizer's parameters, and the optimizer's update; returns the loss."""

    def __init__(self, network, optimizer, sens=None):
        super().__init__()
        from ..autograd import value_and_grad
        if sens is not None:
            raise NotImplementedError("TrainOneStepCell: sens is not supported")
        from .. import parallel_context
        self.network = network
        object.__setattr__(self, "optimizer", optimizer)
        # DATA_PARALLEL: the gradients are all-reduced before the update, as MindSpore's
        # TrainOneStepCell does (mean and degree from the auto-parallel context).
        reducer = None
        if parallel_context.data_parallel():
            from .grad_reducer import DistributedGradReducer
            reducer = DistributedGradReducer(optimizer.parameters,
                                             parallel_context.get_auto_parallel_context("gradients_mean"),
                                             parallel_context.get_auto_parallel_context("device_num"))
        object.__setattr__(self, "grad_reducer", reducer)
        object.__setattr__(self, "_grad_fn", value_and_grad(network, None, optimizer.parameters))

    def construct(self, *inputs):
        loss, grads = self._grad_fn(*inputs)
        if self.grad_reducer is not None:
            grads = self.grad_reducer(grads)
        self.optimizer(grads)
        return loss

    def __call__(self, *inputs):
        return self.construct(*inputs)  # the step itself is never compiled as one forward
