#!/usr/bin/env python3
"""Small real-shaped ONNX models as shipped models are made (NOTE [ONNX dynamic shapes]), with ONNX
Runtime's outputs: tests/fixtures/onnx/shipped/<case>/model.onnx and, per data set j,
set<j>_input_<k>.npy / set<j>_output_<k>.npy (ONNX Runtime's outputs). tests/lite/onnx_shipped_test.cc
runs every set through one Lite model, twice over, against them.

The PyTorch exports (torch.onnx.export of PyTorch 1.13, Debian's python3-torch under /usr/bin/python3)
are what OCR, detection and voice-activity wheels ship: F.pad(mode="reflect") as a negative-step
Slice, F.interpolate as Resize (op set 11+) or Upsample (op set 9), ConvTranspose2d, HardSwish,
LSTM / GRU, and symbolic image and time extents (dynamic_axes); one input is rewritten to declare
extent -1, as some exporters do. The If models are written with onnx.helper: a constant
condition, and a condition computed from an input (a sample rate, as voice-activity models do).

Rerun (venv: bash scripts/install-py-peers.sh onnx; apt: python3-torch):
  .venv-peers/bin/python tools/make_onnx_shipped_fixtures.py tests/fixtures/onnx/shipped
"""
import os
import shutil
import subprocess
import sys


def export_torch(out):
    """Runs under /usr/bin/python3 (torch): writes <case>/model.onnx and <case>/set<j>_input_<k>.npy."""
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    torch.manual_seed(0)

    class OcrDet(nn.Module):  # a DBNet-like detector head: reflect pad, strided conv, up again
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, padding=0)
            self.bn = nn.BatchNorm2d(8)
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
            self.up = nn.ConvTranspose2d(8, 4, 2, stride=2)
            self.pool = nn.AvgPool2d(3, stride=1, padding=1)
            self.head = nn.Conv2d(12, 1, 1)

        def forward(self, x):
            y = F.relu(self.bn(self.c1(F.pad(x, (1, 1, 1, 1), mode="reflect"))))
            z = F.hardswish(self.c2(y))
            u = self.up(z)
            n = F.interpolate(z, scale_factor=2.0, mode="nearest")
            return torch.sigmoid(self.head(torch.cat([self.pool(u), n[:, :, :, :]], 1)[:, :12]))

    class YoloNeck(nn.Module):  # bilinear upsampling to a given size and a concat, as detector necks do
        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 6, 3, stride=2, padding=1)
            self.c2 = nn.Conv2d(9, 4, 1)

        def forward(self, x):
            y = F.silu(self.c1(x))
            up = F.interpolate(y, size=(x.shape[2], x.shape[3]), mode="bilinear", align_corners=False)
            flipped = torch.flip(x, dims=[3])
            return self.c2(torch.cat([up, flipped], 1))

    class Vad(nn.Module):  # a voice-activity detector: conv front end, LSTM, per-frame probability
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(1, 8, 5, stride=2, padding=2)
            self.lstm = nn.LSTM(8, 16, batch_first=True)
            self.out = nn.Linear(16, 1)

        def forward(self, x, h, c):
            f = F.relu(self.conv(x)).transpose(1, 2)
            y, (h2, c2) = self.lstm(f, (h, c))
            return torch.sigmoid(self.out(y)), h2, c2

    class BiGru(nn.Module):  # a text recogniser's sequence head: bidirectional GRU
        def __init__(self):
            super().__init__()
            self.gru = nn.GRU(6, 5, bidirectional=True)

        def forward(self, x):
            return self.gru(x)[0]

    rng = np.random.default_rng(0)

    def save(case, model, sets, names, outputs, dynamic, opset):
        d = os.path.join(out, case)
        os.makedirs(d, exist_ok=True)
        model.eval()
        with torch.no_grad():
            torch.onnx.export(model, tuple(torch.from_numpy(a) for a in sets[0]), os.path.join(d, "model.onnx"), opset_version=opset,
                              input_names=names, output_names=outputs, dynamic_axes=dynamic)
        for j, arrays in enumerate(sets):
            for k, a in enumerate(arrays):
                np.save(os.path.join(d, f"set{j}_input_{k}.npy"), a)

    img = lambda h, w: rng.standard_normal((1, 3, h, w)).astype(np.float32)
    det = OcrDet()
    for m in det.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2)
    save("ocr_det_opset11", det, [[img(16, 24)], [img(20, 12)]], ["x"], ["y"], {"x": {2: "H", 3: "W"}, "y": {2: "H", 3: "W"}}, 11)
    save("ocr_det_opset9_upsample", det, [[img(12, 12)]], ["x"], ["y"], None, 9)
    save("yolo_neck_opset13", YoloNeck(), [[img(16, 16)], [img(12, 20)]], ["x"], ["y"], {"x": {0: "N", 2: "H", 3: "W"}}, 13)
    vad_in = lambda t: [rng.standard_normal((1, 1, t)).astype(np.float32), np.zeros((1, 1, 16), np.float32),
                        rng.standard_normal((1, 1, 16)).astype(np.float32) * 0.1]
    save("vad_lstm_opset12", Vad(), [vad_in(40), vad_in(64)], ["x", "h", "c"], ["p", "h2", "c2"], {"x": {2: "T"}, "p": {1: "T"}}, 12)
    save("ocr_rec_bigru_opset14", BiGru(), [[rng.standard_normal((7, 2, 6)).astype(np.float32)]], ["x"], ["y"], None, 14)


def write_if_models(out):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)

    def branch(name, op, scale):
        k = helper.make_tensor(name + "_k", TensorProto.FLOAT, [], [scale])
        return helper.make_graph([helper.make_node(op, ["x"], [name + "_a"]), helper.make_node("Mul", [name + "_a", name + "_k"], [name + "_y"])],
                                 name, [], [helper.make_tensor_value_info(name + "_y", TensorProto.FLOAT, None)], [k])

    # A sample rate picks the branch, as voice-activity models do: Equal(sr, 16000).
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    nodes = [helper.make_node("Constant", [], ["rate"], value=helper.make_tensor("rate", TensorProto.INT64, [], [16000])),
             helper.make_node("Equal", ["sr", "rate"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=branch("then", "Tanh", 2.0), else_branch=branch("else", "Sigmoid", 3.0))]
    g = helper.make_graph(nodes, "if_rate", [x, sr], [y])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "if_sample_rate")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for j, rate in enumerate([16000, 8000, 16000]):
        np.save(os.path.join(d, f"set{j}_input_0.npy"), rng.standard_normal((2, 3)).astype(np.float32))
        np.save(os.path.join(d, f"set{j}_input_1.npy"), np.array(rate, dtype=np.int64))

    # A constant condition (op set 11's exports of a traced `if`).
    nodes = [helper.make_node("Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [False])),
             helper.make_node("If", ["c"], ["y"], then_branch=branch("then", "Tanh", 2.0), else_branch=branch("else", "Relu", 0.5))]
    m = helper.make_model(helper.make_graph(nodes, "if_const", [x], [y]), opset_imports=[helper.make_opsetid("", 11)])
    d = os.path.join(out, "if_constant_opset11")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "set0_input_0.npy"), rng.standard_normal((2, 3)).astype(np.float32))


def write_unknown_dims_model(out):
    """paddle2onnx's spelling of unknown extents: every one is dim_param "?", height and width
    alike (unrelated dimensions), feeding stride-2 convolutions, whose outputs are the same size
    for consecutive input sizes (a mapping that guessed extents 5 and 6 would take the width as
    fixed)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(2)
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [4, 2, 3, 3], rng.standard_normal(72).astype(np.float32).tolist())
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [3, 4, 3, 3], rng.standard_normal(108).astype(np.float32).tolist())
    conv = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    nodes = [helper.make_node("Conv", ["x", "w1"], ["a"], **conv), helper.make_node("Relu", ["a"], ["b"]),
             helper.make_node("Conv", ["b", "w2"], ["y"], **conv)]
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, "?", "?"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, "?", "?"])
    m = helper.make_model(helper.make_graph(nodes, "unknown_dims", [x], [y], [w1, w2]),
                          opset_imports=[helper.make_opsetid("", 11)])
    d = os.path.join(out, "paddle_unknown_dims_opset11")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    for j, (h, w) in enumerate([(16, 40), (24, 17), (9, 9)]):
        np.save(os.path.join(d, f"set{j}_input_0.npy"), rng.standard_normal((1, 2, h, w)).astype(np.float32))


def declare_minus_one(path, input_name):
    """Rewrites an input's symbolic extents as -1, as some exporters write them."""
    import onnx
    m = onnx.load(path)
    for vi in m.graph.input:
        if vi.name == input_name:
            for dim in vi.type.tensor_type.shape.dim:
                if dim.HasField("dim_param"):
                    dim.ClearField("dim_param")
                    dim.dim_value = -1
    onnx.save(m, path)


def add_reference_outputs(out):
    import glob

    import numpy as np
    import onnxruntime as ort

    for d in sorted(glob.glob(os.path.join(out, "*"))):
        s = ort.InferenceSession(os.path.join(d, "model.onnx"), providers=["CPUExecutionProvider"])
        names = [i.name for i in s.get_inputs()]
        j = 0
        while os.path.exists(os.path.join(d, f"set{j}_input_0.npy")):
            feeds = {n: np.load(os.path.join(d, f"set{j}_input_{k}.npy")) for k, n in enumerate(names)}
            for k, a in enumerate(s.run(None, feeds)):
                np.save(os.path.join(d, f"set{j}_output_{k}.npy"), a)
            j += 1
        print(f"{os.path.basename(d)}: {j} data sets")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--export-torch":
        export_torch(sys.argv[2])
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--export-torch", out], check=True)
    write_if_models(out)
    write_unknown_dims_model(out)
    declare_minus_one(os.path.join(out, "yolo_neck_opset13", "model.onnx"), "x")
    add_reference_outputs(out)


if __name__ == "__main__":
    main()
