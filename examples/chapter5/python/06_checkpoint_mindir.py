# Chapter 5.9, "CKPT 与 MindIR", as printed (only the imports changed), with the Fp16Linear network
# of 5.5 as `net` and `reloaded` (the lines before the snippet build them) and the checks of the
# chapter's samples/chapter5/06_checkpoint_mindir.py after it: bytes, SHA-256, max abs error.
import hashlib
import os

import numpy as np
import spore as ms
from spore import Tensor, nn, ops


class Fp16Linear(nn.Cell):
    def __init__(self, in_dim: int, out_dim: int, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        weight = rng.normal(scale=0.1, size=(in_dim, out_dim)).astype(np.float16)
        self.weight = ms.Parameter(Tensor(weight, ms.float16), name="weight")
        self.bias = ms.Parameter(Tensor(np.zeros((out_dim,), np.float16), ms.float16), name="bias")

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


os.makedirs("outputs", exist_ok=True)
net, reloaded = Fp16Linear(4, 1, seed=1), Fp16Linear(4, 1, seed=7)

# --- the chapter's snippet ---
# net 与 reloaded 都是 5.5 节验证过的 Fp16Linear 网络
ms.save_checkpoint(net, "outputs/chapter5_linear.ckpt")

params = ms.load_checkpoint("outputs/chapter5_linear.ckpt")
ms.load_param_into_net(reloaded, params)

ms.export(
    net,
    Tensor(np.zeros((1, 4), np.float16), ms.float16),
    file_name="outputs/chapter5_linear",
    file_format="MINDIR",
)
# --- end of the snippet ---

probe = Tensor(np.linspace(-1, 1, 8).reshape(2, 4).astype(np.float16), ms.float16)
max_abs_error = float(np.max(np.abs(net(probe).asnumpy().astype(np.float64) -
                                    reloaded(probe).asnumpy().astype(np.float64))))
artifacts = {}
for path in ("outputs/chapter5_linear.ckpt", "outputs/chapter5_linear.mindir"):
    data = open(path, "rb").read()
    artifacts[path] = (len(data), hashlib.sha256(data).hexdigest())
    print(f"{path}: {len(data)} bytes, sha256 {artifacts[path][1][:8]}...")
print(f"reload max abs error {max_abs_error}")
