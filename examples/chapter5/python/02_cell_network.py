# Chapter 5.5, "最小可运行的网络定义", as printed; only the imports changed.
import numpy as np
import spore as ms
from spore import Tensor, nn, ops


class Fp16Linear(nn.Cell):
    """本板可用的最小线性层：显式 fp16 参数，矩阵乘走 ops.matmul。"""

    def __init__(self, in_dim: int, out_dim: int, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        weight = rng.normal(scale=0.1, size=(in_dim, out_dim)).astype(np.float16)
        self.weight = ms.Parameter(Tensor(weight, ms.float16), name="weight")
        self.bias = ms.Parameter(Tensor(np.zeros((out_dim,), np.float16), ms.float16), name="bias")

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


net = nn.SequentialCell([Fp16Linear(4, 8, seed=1), nn.ReLU(), Fp16Linear(8, 1, seed=2)])
output = net(Tensor(np.ones((1, 4), np.float16), ms.float16))
print(output.shape, output.asnumpy())
