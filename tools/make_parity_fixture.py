#!/usr/bin/python3
"""Training-parity fixture: the same models, initial weights and data trained in PyTorch.

Run with Debian's python3-torch (it lives under /usr/bin/python3):
    /usr/bin/python3 tools/make_parity_fixture.py
Writes tests/fixtures/parity/{mlp,cnn}.safetensors. tests/nn/parity_test.cc loads each file, builds
the same network in Spore, sets the initial weights from it, trains on the same data with the same
optimizer, and compares the loss after every step (and the final weights) with PyTorch's.

Each file holds (safetensors, written here by hand so no extra package is needed):
    init.<param>   initial weights, under Spore's (MindSpore's) parameter names
    final.<param>  weights after the last step
    data.x, data.y inputs and integer labels
    losses         float64 [steps]: the loss PyTorch computed at each step, before its update
All computation is float32 with one thread, deterministic.
"""
import json
import os
import struct

import numpy as np
import torch
import torch.nn as tnn

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "parity")

DTYPES = {np.dtype("float32"): "F32", np.dtype("float64"): "F64", np.dtype("int64"): "I64"}


def save_safetensors(path, tensors, metadata):
    header, blobs, offset = {"__metadata__": metadata}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.tobytes()
        header[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def mlp_case():
    """Dense(10,32) -> LayerNorm(32) -> GELU -> Dense(32,32) -> Tanh -> Dense(32,4);
    cross-entropy with label smoothing 0.1; AdamW(lr 1e-2, betas (0.9, 0.999), eps 1e-8, wd 1e-2)."""
    torch.manual_seed(7)
    net = tnn.Sequential(tnn.Linear(10, 32), tnn.LayerNorm(32), tnn.GELU(), tnn.Linear(32, 32), tnn.Tanh(),
                         tnn.Linear(32, 4))
    with torch.no_grad():  # LayerNorm's affine parameters start away from 1/0 so their gradients matter
        net[1].weight.uniform_(0.5, 1.5)
        net[1].bias.uniform_(-0.2, 0.2)
    names = {"0.weight": "0.weight", "0.bias": "0.bias", "1.weight": "1.gamma", "1.bias": "1.beta",
             "3.weight": "3.weight", "3.bias": "3.bias", "5.weight": "5.weight", "5.bias": "5.bias"}
    x = torch.randn(32, 10)
    y = torch.randint(0, 4, (32,))
    opt = torch.optim.AdamW(net.parameters(), lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
    loss_fn = lambda out: tnn.functional.cross_entropy(out, y, label_smoothing=0.1)
    return net, names, x, y, opt, loss_fn, 40


def cnn_case():
    """Conv2d(1,4,3,pad 1) -> BatchNorm2d(4) -> ReLU -> MaxPool2d(2) -> Conv2d(4,6,3,pad 1,groups 2)
    -> ReLU -> AvgPool2d(2) -> Flatten -> Dense(24,3); cross-entropy; SGD(lr 0.05, momentum 0.9,
    nesterov, wd 1e-3)."""
    torch.manual_seed(11)
    net = tnn.Sequential(tnn.Conv2d(1, 4, 3, padding=1), tnn.BatchNorm2d(4), tnn.ReLU(), tnn.MaxPool2d(2),
                         tnn.Conv2d(4, 6, 3, padding=1, groups=2), tnn.ReLU(), tnn.AvgPool2d(2), tnn.Flatten(),
                         tnn.Linear(24, 3))
    with torch.no_grad():
        net[1].weight.uniform_(0.5, 1.5)
        net[1].bias.uniform_(-0.2, 0.2)
    names = {"0.weight": "0.weight", "0.bias": "0.bias", "1.weight": "1.gamma", "1.bias": "1.beta",
             "4.weight": "4.weight", "4.bias": "4.bias", "8.weight": "8.weight", "8.bias": "8.bias"}
    x = torch.randn(8, 1, 8, 8)
    y = torch.randint(0, 3, (8,))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3)
    loss_fn = lambda out: tnn.functional.cross_entropy(out, y)
    return net, names, x, y, opt, loss_fn, 30


def run(case, path):
    net, names, x, y, opt, loss_fn, steps = case()
    params = dict(net.named_parameters())
    tensors = {"init." + names[k]: p.detach().numpy().copy() for k, p in params.items()}
    losses = []
    net.train()
    for _ in range(steps):
        opt.zero_grad()
        loss = loss_fn(net(x))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    tensors.update({"final." + names[k]: p.detach().numpy().copy() for k, p in params.items()})
    tensors["data.x"] = x.numpy()
    tensors["data.y"] = y.numpy().astype(np.int64)
    tensors["losses"] = np.array(losses, dtype=np.float64)
    save_safetensors(path, tensors, {"producer": "tools/make_parity_fixture.py", "torch": torch.__version__,
                                     "steps": str(steps)})
    print(f"{path}: {steps} steps, loss {losses[0]:.6f} -> {losses[-1]:.6f}")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    run(mlp_case, os.path.join(OUT, "mlp.safetensors"))
    run(cnn_case, os.path.join(OUT, "cnn.safetensors"))
