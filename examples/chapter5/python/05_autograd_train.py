# Chapter 5.8, "自动微分、优化器与训练循环": the chapter's Fp16Linear trained with make_grad_fn
# (as printed; only the imports changed) and nn.Adam on a fixed-seed synthetic linear regression
# (y = x w* + b*, w* = [0.5, -0.75, 0.25, 1.0], b* = 0.25, 64 rows), as the chapter's
#   python 05_autograd_train.py --steps 200 --lr 0.05
# which took the loss from 4.644531 to about 7e-06.
import sys
import time

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


def make_grad_fn(net):
    def forward_fn(data, target):
        return ops.mse_loss(net(data), target)

    # grad_position=None：不对输入求梯度
    # weights=net.trainable_params()：明确指定要被更新的参数
    return ms.value_and_grad(forward_fn, None, net.trainable_params())


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


steps, lr = option("--steps", 200), option("--lr", 0.05)
w_true, b_true = np.array([0.5, -0.75, 0.25, 1.0]), 0.25
x64 = np.random.default_rng(2024).normal(size=(64, 4)).astype(np.float16).astype(np.float64)
y64 = x64 @ w_true + b_true
x, y = Tensor(x64, ms.float16), Tensor(y64.reshape(64, 1), ms.float16)

net = Fp16Linear(4, 1, seed=1)
optimizer = nn.Adam(net.trainable_params(), learning_rate=lr)
grad_fn = make_grad_fn(net)
losses = []
start = time.perf_counter()
for step in range(steps):
    loss, grads = grad_fn(x, y)
    optimizer(grads)
    losses.append(float(loss.asnumpy()))
seconds = time.perf_counter() - start

# The end loss in float64 on the host from the trained parameters, not from Spore's kernels.
w = net.weight.asnumpy().astype(np.float64).reshape(4)
b = float(net.bias.asnumpy().astype(np.float64)[0])
end_loss = float(np.mean((x64 @ w + b - y64) ** 2))
print(f"loss {losses[0]:.6f} -> {end_loss:.3g} (float64, host) in {steps} steps, {seconds:.2f} s")
