#!/usr/bin/env python3
"""MindSpore's own files as fixtures for Spore (issue 10 item 7, NOTE [MindIR]).

Runs the real MindSpore from PyPI (scripts/install-py-peers.sh mindspore makes .venv-ms/):

    .venv-ms/bin/python tools/make_mindspore_fixtures.py [OUT_DIR]

For each of the chapter's networks it writes NAME.mindir (ms.export, MINDIR), NAME.ckpt
(ms.save_checkpoint) where the network has parameters, the inputs NAME.in0.npy ... and
MindSpore's outputs NAME.out0.npy computed on the CPU target. Then it derives the version-1 and
version-2 test files and a version-4 file from the fp16 linear layer's version-3 export by
rewriting fields (see tests/fixtures/mindir/README.md: they are NOT real exports of older
MindSpore releases). Weights come from fixed numpy seeds, so a rerun writes the same networks;
MindSpore's export embeds nothing time-dependent that the tests compare.
"""
import hashlib
import os
import sys

import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops
from mindspore.train import mind_ir_pb2

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "mindir")
ms.set_context(mode=ms.GRAPH_MODE, device_target="CPU")
ms.set_seed(0)


class Fp16Linear(nn.Cell):
    """The chapter's section 5.5 layer, verbatim in behaviour: fp16 parameters, ops.matmul."""

    def __init__(self, in_dim, out_dim, seed=0):
        super().__init__()
        rng = np.random.default_rng(seed)
        weight = rng.normal(scale=0.1, size=(in_dim, out_dim)).astype(np.float16)
        self.weight = ms.Parameter(Tensor(weight, ms.float16), name="weight")
        self.bias = ms.Parameter(Tensor(np.zeros((out_dim,), np.float16), ms.float16), name="bias")

    def construct(self, x):
        return ops.matmul(x, self.weight) + self.bias


def seeded_dense(d, seed):
    # Fixed weights, so the fixture does not depend on MindSpore's initialiser.
    rng = np.random.default_rng(seed)
    d.weight.set_data(Tensor(rng.normal(scale=0.5, size=d.weight.shape).astype(np.float32)))
    d.bias.set_data(Tensor(rng.normal(scale=0.1, size=d.bias.shape).astype(np.float32)))
    return d


class Mlp(nn.Cell):
    def __init__(self):
        super().__init__()
        self.fc1 = seeded_dense(nn.Dense(4, 8), 11)
        self.relu = nn.ReLU()
        self.fc2 = seeded_dense(nn.Dense(8, 3), 12)

    def construct(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class Cnn(nn.Cell):
    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(21)
        self.conv = nn.Conv2d(1, 4, 3, pad_mode="valid", has_bias=True)
        self.conv.weight.set_data(Tensor(rng.normal(scale=0.3, size=self.conv.weight.shape).astype(np.float32)))
        self.conv.bias.set_data(Tensor(rng.normal(scale=0.1, size=self.conv.bias.shape).astype(np.float32)))
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2)
        self.avg = nn.AvgPool2d(kernel_size=2, stride=1)
        self.flatten = nn.Flatten()
        self.fc = seeded_dense(nn.Dense(4 * 2 * 2, 5), 22)
        self.softmax = nn.Softmax()

    def construct(self, x):
        return self.softmax(self.fc(self.flatten(self.avg(self.pool(self.relu(self.conv(x)))))))


class CnnSame(nn.Cell):
    """The padding modes: a stride-2 "same" convolution and max pooling on even extents (MindSpore
    pads those asymmetrically, more at the end), explicit symmetric and asymmetric "pad"."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(41)

        def conv(cin, cout, k, **kw):
            c = nn.Conv2d(cin, cout, k, has_bias=False, **kw)
            c.weight.set_data(Tensor(rng.normal(scale=0.3, size=c.weight.shape).astype(np.float32)))
            return c
        self.conv1 = conv(2, 4, 3, stride=2, pad_mode="same")
        self.pool1 = nn.MaxPool2d(kernel_size=3, stride=2, pad_mode="same")
        self.conv2 = conv(4, 4, 3, pad_mode="pad", padding=1)
        self.conv3 = conv(4, 4, 2, pad_mode="pad", padding=(0, 1, 1, 0))
        self.avg = nn.AvgPool2d(kernel_size=2, stride=2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc = seeded_dense(nn.Dense(4, 3), 42)

    def construct(self, x):
        y = self.pool1(self.relu(self.conv1(x)))
        y = self.conv3(self.relu(self.conv2(y)))
        return self.fc(self.flatten(self.avg(y)))


def seeded_cell(cell, seed):
    """Every parameter of `cell` (convolutions, BatchNorm's scale, shift and moving statistics)
    drawn from a fixed seed, so the network does not rest on MindSpore's initialisers and its
    BatchNorm statistics are not the trivial 0 and 1."""
    rng = np.random.default_rng(seed)
    for p in cell.get_parameters():
        shape = p.shape
        if p.name.endswith("moving_variance"):
            v = rng.uniform(0.5, 1.5, size=shape)
        elif p.name.endswith("gamma"):
            v = rng.uniform(0.8, 1.2, size=shape)
        else:
            v = rng.normal(scale=0.3, size=shape)
        p.set_data(Tensor(v.astype(np.float32)))
    return cell


class InvertedResidual(nn.Cell):
    """MobileNetV2's block: 1x1 expand, 3x3 depthwise, 1x1 project, each with BatchNorm; ReLU6;
    the residual when the shape allows."""

    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hid = cin * expand
        self.use_res = stride == 1 and cin == cout
        self.body = nn.SequentialCell([
            nn.Conv2d(cin, hid, 1, has_bias=False), nn.BatchNorm2d(hid), nn.ReLU6(),
            nn.Conv2d(hid, hid, 3, stride=stride, pad_mode="pad", padding=1, group=hid, has_bias=False),
            nn.BatchNorm2d(hid), nn.ReLU6(),
            nn.Conv2d(hid, cout, 1, has_bias=False), nn.BatchNorm2d(cout)])

    def construct(self, x):
        y = self.body(x)
        return x + y if self.use_res else y


class MobileNetTiny(nn.Cell):
    """The chapter's MobileNetV2 smoke model in miniature (its layer kinds at a few KB)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.SequentialCell([nn.Conv2d(3, 8, 3, stride=2, pad_mode="pad", padding=1, has_bias=False),
                                       nn.BatchNorm2d(8), nn.ReLU6()])
        self.b1 = InvertedResidual(8, 8, 1, 2)
        self.b2 = InvertedResidual(8, 12, 2, 2)
        self.mean = ops.ReduceMean(keep_dims=False)
        self.fc = nn.Dense(12, 4)
        seeded_cell(self, 51)

    def construct(self, x):
        y = self.b2(self.b1(self.stem(x)))
        return self.fc(self.mean(y, (2, 3)))


class Misc(nn.Cell):
    """Reshape, Cast and the functional dense (the Dense primitive), which nn.Dense does not emit."""

    def __init__(self):
        super().__init__()
        rng = np.random.default_rng(31)
        self.w = ms.Parameter(Tensor(rng.normal(scale=0.5, size=(5, 4)).astype(np.float32)), name="w")
        self.b = ms.Parameter(Tensor(rng.normal(scale=0.1, size=(5,)).astype(np.float32)), name="b")

    def construct(self, x):
        y = ops.dense(ops.reshape(x, (3, 4)), self.w, self.b)
        return ops.cast(ops.relu(y), ms.float16)


class TwoOut(nn.Cell):
    """A network returning a tuple: MindSpore's graph output is a MakeTuple of two tensors."""

    def construct(self, x, y):
        return x + y, ops.relu(x)


class AddNet(nn.Cell):
    def construct(self, x, y):
        return x + y


def sha(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def emit(name, net, inputs, ckpt=True):
    net.set_train(False)
    outs = net(*[Tensor(a) for a in inputs])
    outs = outs if isinstance(outs, tuple) else (outs,)
    base = os.path.join(OUT, name)
    ms.export(net, *[Tensor(np.zeros_like(a)) for a in inputs], file_name=base, file_format="MINDIR")
    for i, a in enumerate(inputs):
        np.save(f"{base}.in{i}.npy", a)
    for i, o in enumerate(outs):
        np.save(f"{base}.out{i}.npy", o.asnumpy())
    if ckpt:
        ms.save_checkpoint(net, base + ".ckpt")
    m = mind_ir_pb2.ModelProto()
    m.ParseFromString(open(base + ".mindir", "rb").read())
    ops_used = sorted({n.op_type for n in m.graph.node})
    print(f"{name}.mindir: {os.path.getsize(base + '.mindir')} bytes, mind_ir_version {m.mind_ir_version}, "
          f"ir_version {m.ir_version!r}, sha256 {sha(base + '.mindir')[:8]}..., ops {ops_used}")
    if ckpt:
        print(f"{name}.ckpt: {os.path.getsize(base + '.ckpt')} bytes, sha256 {sha(base + '.ckpt')[:8]}...")


# Version 1 (IR_VERSION) predates IR_VERSION_WITH_PRIM_FUNCTION (2): a version-1 file has no
# primitive functions, so an operator's arguments are attributes of its PrimitiveProto, not
# Constant inputs, and MatMulExt (newer than MindSpore 2.0) is a MatMul with transpose attributes.
# These are the argument names MindSpore's primitives carried as attributes.
V1_ARGS = {"MatMul": ["transpose_a", "transpose_b"], "BiasAdd": ["data_format"]}
V1_RENAME = {"MatMulExt": "MatMul"}


def to_v1(m):
    consts = {n.output[0]: n for n in m.graph.node if n.op_type == "Constant"}
    prims = {p.name: p for p in m.primitives}
    for node in m.graph.node:
        if not node.op_type.startswith("REF::"):
            continue
        p = prims[node.op_type[5:]]
        if p.prim_type != mind_ir_pb2.PrimitiveProto.PRIMITIVE_FUNCTION:
            continue
        if p.op_type in V1_RENAME:
            p.op_type = V1_RENAME[p.op_type]
            for a in ("transpose_a", "transpose_b"):
                node.input.append(a + "_false")  # resolved below as a False attribute
        args = V1_ARGS.get(p.op_type, [])
        extra = list(node.input[2:])
        del node.input[2:]
        for name, ref in zip(args, extra):
            if any(a.name == name for a in p.attribute):
                continue
            attr = p.attribute.add()
            attr.name = name
            c = consts.get(ref)
            value = c.attribute[0] if c is not None else None
            if name == "data_format":
                attr.type = mind_ir_pb2.AttributeProto.STRING
                attr.s = b"NCHW"  # MindSpore's Format enum: 0 is NCHW
            else:
                attr.type = mind_ir_pb2.AttributeProto.BOOL
                attr.i = value.i if value is not None else 0
    for p in m.primitives:
        p.ClearField("prim_type")
    used = {i for n in m.graph.node for i in n.input}
    keep = [n for n in m.graph.node if n.op_type != "Constant" or n.output[0] in used]
    del m.graph.node[:]
    m.graph.node.extend(keep)


def derive_versions(name):
    """Rewritten copies of NAME.mindir at versions 1, 2 and 4 (see the README: not real exports)."""
    base = os.path.join(OUT, name)
    m = mind_ir_pb2.ModelProto()
    m.ParseFromString(open(base + ".mindir", "rb").read())
    for v in (1, 2, 4):
        if v == 4 and name != "fp16_linear":
            continue
        d = mind_ir_pb2.ModelProto()
        d.CopyFrom(m)
        d.mind_ir_version = v
        if v == 1:
            to_v1(d)
        # Version 2 differs from 3 only by the scalar graph holder (dynamic shapes), which these
        # static networks do not use: the version field is the whole rewrite.
        open(f"{base}.v{v}.mindir", "wb").write(d.SerializeToString())
        print(f"{name}.v{v}.mindir: derived from the version-3 export, mind_ir_version {v}")


def scalar_checkpoint():
    """dtypes.ckpt: a scalar (no dims), int64, bool and bfloat16 parameters, and an empty tensor,
    which MindSpore's save_checkpoint leaves out of the file."""
    ms.save_checkpoint([{"name": "s", "data": Tensor(np.float32(2.5))},
                        {"name": "empty", "data": Tensor(np.zeros((0, 3), np.float32))},
                        {"name": "i", "data": Tensor(np.array([1, -2], np.int64))},
                        {"name": "b", "data": Tensor(np.array([True, False]))},
                        {"name": "h", "data": Tensor(np.array([[1.5, -0.25]], np.float32), ms.bfloat16)}],
                       os.path.join(OUT, "dtypes.ckpt"))
    print(f"dtypes.ckpt: {os.path.getsize(os.path.join(OUT, 'dtypes.ckpt'))} bytes")


def main():
    os.makedirs(OUT, exist_ok=True)
    print(f"MindSpore {ms.__version__}")
    rng = np.random.default_rng(7)
    emit("fp16_linear", Fp16Linear(4, 1, seed=1), [rng.normal(size=(1, 4)).astype(np.float16)])
    emit("mlp", Mlp(), [rng.normal(size=(2, 4)).astype(np.float32)])
    emit("cnn", Cnn(), [rng.normal(size=(2, 1, 8, 8)).astype(np.float32)])
    emit("misc", Misc(), [rng.normal(size=(2, 6)).astype(np.float32)])
    emit("addnet", AddNet(), [rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)],
         ckpt=False)
    emit("twoout", TwoOut(), [rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(2, 3)).astype(np.float32)],
         ckpt=False)
    emit("cnn_same", CnnSame(), [rng.normal(size=(1, 2, 8, 8)).astype(np.float32)])
    emit("mobilenet_tiny", MobileNetTiny(), [rng.normal(size=(1, 3, 16, 16)).astype(np.float32)])
    derive_versions("fp16_linear")
    derive_versions("mlp")
    scalar_checkpoint()
    for f in os.listdir(OUT):
        os.chmod(os.path.join(OUT, f), 0o644)  # MindSpore writes its files read-only


if __name__ == "__main__":
    main()
