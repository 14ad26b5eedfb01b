"""mindspore.nn under Spore: Cell, the built-in layers, losses and optimizers."""
from .cell import Cell, SequentialCell, CellList, WithLossCell, TrainOneStepCell
from .layers import *  # noqa: F401,F403
from .layers import __all__ as _layers
from .optim import Optimizer, Adam, AdamW, AdamWeightDecay, SGD, Momentum
from .grad_reducer import DistributedGradReducer

__all__ = ["Cell", "SequentialCell", "CellList", "WithLossCell", "TrainOneStepCell", "Optimizer", "Adam", "AdamW", "AdamWeightDecay", "SGD",
           "Momentum", "DistributedGradReducer"] + list(_layers)
