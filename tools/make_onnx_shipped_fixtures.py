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
condition, a condition computed from an input (a sample rate, as voice-activity models do), and a
condition computed from a large value (a wake-word classifier's score), which Lite runs as an
if_else node choosing its branch at run time (NOTE [Lite control flow]). So are com.microsoft's
DynamicQuantizeLSTM models (as onnxruntime.quantization.quantize_dynamic writes them: int8 or
uint8 weights stored [dirs, input, 4H], scales per direction or per gate column).

A Loop model (onnx.helper too) whose condition is computed from large values, with six loop-carried
values, runs as a while_loop node (NOTE [ONNX Loop at run time]).

Rerun (venv: bash scripts/install-py-peers.sh onnx; apt: python3-torch):
  .venv-peers/bin/python tools/make_onnx_shipped_fixtures.py tests/fixtures/onnx/shipped
or only the Loop case, in place: .venv-peers/bin/python tools/make_onnx_shipped_fixtures.py --loop tests/fixtures/onnx/shipped
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


def write_computed_if_model(out):
    """An If on a score computed from a large activation (Relu over 5,000 values, summed): Lite
    cannot know it when mapping, so the branch is chosen at run time. The branches read an outer
    initializer, an outer computed value and the graph input, and the then branch holds a nested
    If on another computed condition; the data sets take each path."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(3)
    n = 5000
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, n])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, n])
    wv = rng.standard_normal(n).astype(np.float32)
    w = helper.make_tensor("w", TensorProto.FLOAT, [n], wv.tolist())
    limit = helper.make_tensor("limit", TensorProto.FLOAT, [], [100.0])
    zero = helper.make_tensor("zero", TensorProto.FLOAT, [], [0.0])

    def graph(name, nodes, out):
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, n])])

    inner_then = graph("inner_then", [helper.make_node("Tanh", ["scaled"], ["it"])], "it")
    inner_else = graph("inner_else", [helper.make_node("Sigmoid", ["scaled"], ["ie"])], "ie")
    then_g = graph("then", [helper.make_node("Mul", ["x", "w"], ["xw"]),
                            helper.make_node("ReduceMean", ["xw"], ["m"], keepdims=0),
                            helper.make_node("Greater", ["m", "zero"], ["c2"]),
                            helper.make_node("If", ["c2"], ["t"], then_branch=inner_then, else_branch=inner_else)], "t")
    else_g = graph("else", [helper.make_node("Neg", ["scaled"], ["e"])], "e")
    nodes = [helper.make_node("Relu", ["x"], ["r"]),
             helper.make_node("ReduceSum", ["r"], ["s"], keepdims=0),
             helper.make_node("Greater", ["s", "limit"], ["c"]),
             helper.make_node("Add", ["x", "x"], ["scaled"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)]
    m = helper.make_model(helper.make_graph(nodes, "if_computed", [x], [y], [w, limit, zero]),
                          opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "if_computed_condition")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    base = rng.standard_normal((1, n)).astype(np.float32)
    # then with the nested then (the mean of x * w above 0), else, then with the nested else.
    sets = [np.abs(base) * np.sign(wv), -np.abs(base), -np.abs(base) * np.sign(wv)]
    for j, a in enumerate(sets):
        np.save(os.path.join(d, f"set{j}_input_0.npy"), a.astype(np.float32))


def write_computed_loop_model(out):
    """A Loop whose condition is computed from large values, with 6 loop-carried values (past an op's
    4 outputs) of several dtypes and shapes, one passed through unchanged (a weight, as Paddle exports
    thread theirs through), the iteration number read by the body and an outer value read by it; Lite
    runs it as one while_loop node (NOTE [ONNX Loop at run time]). The data sets stop by the computed
    condition, before the first iteration (the initial condition, computed too), and by the trip count."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(26)
    rows, cols = 8, 640  # x: 5,120 elements, over the 4,096 a mapping computes: the condition is the run's
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64

    def const(name, a):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(a), name + "_v"))

    body_in = [helper.make_tensor_value_info("i", i64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
               helper.make_tensor_value_info("h", f32, [rows, 4]), helper.make_tensor_value_info("acc", f32, [rows, 4]),
               helper.make_tensor_value_info("cnt", i64, [1]), helper.make_tensor_value_info("mx", f32, [1]),
               helper.make_tensor_value_info("w", f32, [4, 4]), helper.make_tensor_value_info("z", f32, [2, 3])]
    body_out = [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("h2", f32, [rows, 4]),
                helper.make_tensor_value_info("acc2", f32, [rows, 4]), helper.make_tensor_value_info("cnt2", i64, [1]),
                helper.make_tensor_value_info("mx2", f32, [1]), helper.make_tensor_value_info("w", f32, [4, 4]),
                helper.make_tensor_value_info("z2", f32, [2, 3])]
    body_nodes = [
        const("tenth", np.float32(0.1)), const("one", np.array([1], np.int64)), const("half", np.float32(0.5)),
        const("shape1", np.array([1], np.int64)),
        helper.make_node("Cast", ["i"], ["fi"], to=f32),
        helper.make_node("Mul", ["fi", "tenth"], ["step"]),
        helper.make_node("MatMul", ["h", "w"], ["hw"]),
        helper.make_node("Add", ["hw", "xs"], ["pre0"]),  # xs: an outer value computed from x
        helper.make_node("Add", ["pre0", "step"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h2"]),
        helper.make_node("Add", ["acc", "h2"], ["acc2"]),
        helper.make_node("Add", ["cnt", "one"], ["cnt2"]),
        helper.make_node("ReduceSum", ["h2"], ["s"], keepdims=0),
        helper.make_node("Reshape", ["s", "shape1"], ["s1"]),
        helper.make_node("Max", ["mx", "s1"], ["mx2"]),
        helper.make_node("ReduceMean", ["acc2"], ["am"], keepdims=1),
        helper.make_node("Mul", ["am", "half"], ["am2"]),
        helper.make_node("Add", ["z", "am2"], ["z2"]),
        helper.make_node("ReduceSum", ["acc2"], ["tot"], keepdims=0),
        helper.make_node("Less", ["tot", "room"], ["c_out"]),
    ]
    body = helper.make_graph(body_nodes, "loop_body", body_in, body_out)
    x = helper.make_tensor_value_info("x", f32, [rows, cols])
    limit = helper.make_tensor_value_info("limit", f32, [])
    outs = [helper.make_tensor_value_info(n, t, None) for n, t in
            [("h_f", f32), ("acc_f", f32), ("cnt_f", i64), ("mx_f", f32), ("w_f", f32), ("z_f", f32)]]
    inits = [numpy_helper.from_array(rng.standard_normal((cols, 4)).astype(np.float32) * 0.05, "proj"),
             numpy_helper.from_array(rng.standard_normal((4, 4)).astype(np.float32) * 0.5, "w0"),
             numpy_helper.from_array(np.array(20, np.int64), "trips"),
             numpy_helper.from_array(np.zeros((rows, 4), np.float32), "zeros"),
             numpy_helper.from_array(np.array([0], np.int64), "cnt0"),
             numpy_helper.from_array(np.array([-5.0], np.float32), "mx0"),
             numpy_helper.from_array(rng.standard_normal((2, 3)).astype(np.float32), "z0")]
    # Abs(x) is over 4,096 elements, so nothing computed from it is known when the graph is mapped.
    nodes = [helper.make_node("Abs", ["x"], ["xa"]),
             helper.make_node("MatMul", ["xa", "proj"], ["xs"]),
             helper.make_node("ReduceSum", ["xa"], ["xt"], keepdims=0),
             helper.make_node("Less", ["xt", "limit"], ["c0"]),
             helper.make_node("Sub", ["limit", "xt"], ["room"]),
             helper.make_node("Loop", ["trips", "c0", "xs", "zeros", "cnt0", "mx0", "w0", "z0"],
                              ["h_f", "acc_f", "cnt_f", "mx_f", "w_f", "z_f"], body=body)]
    m = helper.make_model(helper.make_graph(nodes, "loop_computed", [x, limit], outs, inits),
                          opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(out, "loop_computed_condition")
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    base = rng.standard_normal((rows, cols)).astype(np.float32)
    total = float(np.abs(base).sum())
    # the computed condition stops it after a few iterations; the initial condition (computed too)
    # is false, so no iteration runs; the trip count (20) stops it.
    for j, lim in enumerate([total + 100.0, 2.0, 1e9]):
        np.save(os.path.join(d, f"set{j}_input_0.npy"), base * (1 + j))
        np.save(os.path.join(d, f"set{j}_input_1.npy"), np.array(lim, np.float32))


def write_dynamic_quantize_lstm_models(out):
    """com.microsoft DynamicQuantizeLSTM, as ONNX Runtime's quantize_dynamic writes it (the
    weights quantized here directly: int8 with zero point 0, or uint8 with one zero point)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper

    rng = np.random.default_rng(4)

    def quantize(a, per_channel, signed):
        # a: [dirs, K, 4H] float; scales per direction or per column of each direction.
        axes = (1,) if per_channel else (1, 2)
        if signed:
            scale = np.maximum(np.abs(a).max(axis=axes), 1e-8) / 127.0
            zp = np.zeros_like(scale, dtype=np.int8)
            q = np.clip(np.round(a / np.expand_dims(scale, axes)), -127, 127).astype(np.int8)
        else:
            lo, hi = np.minimum(a.min(), 0), np.maximum(a.max(), 0)
            scale = np.full(a.max(axis=axes).shape, (hi - lo) / 255.0)
            z = int(np.clip(np.round(-lo / ((hi - lo) / 255.0)), 0, 255))
            zp = np.full(scale.shape, z, dtype=np.uint8)
            q = np.clip(np.round(a / np.expand_dims(scale, axes)) + z, 0, 255).astype(np.uint8)
        return q, scale.astype(np.float32), zp

    cases = [("dq_lstm_bidirectional_int8", "bidirectional", False, True, True),
             ("dq_lstm_forward_uint8_per_channel", "forward", True, False, False),
             ("dq_lstm_reverse_int8_per_channel", "reverse", True, True, True)]
    seq, batch, k, h = 6, 2, 10, 8
    for name, direction, per_channel, signed, with_state in cases:
        dirs = 2 if direction == "bidirectional" else 1
        wq, ws, wz = quantize(rng.standard_normal((dirs, k, 4 * h)).astype(np.float32) * 0.4, per_channel, signed)
        rq, rs, rz = quantize(rng.standard_normal((dirs, h, 4 * h)).astype(np.float32) * 0.4, per_channel, signed)
        inits = [onnx.numpy_helper.from_array(wq, "W"), onnx.numpy_helper.from_array(rq, "R"),
                 onnx.numpy_helper.from_array(rng.standard_normal((dirs, 8 * h)).astype(np.float32) * 0.1, "B"),
                 onnx.numpy_helper.from_array(ws, "W_scale"), onnx.numpy_helper.from_array(wz, "W_zero_point"),
                 onnx.numpy_helper.from_array(rs, "R_scale"), onnx.numpy_helper.from_array(rz, "R_zero_point")]
        ins = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [seq, batch, k])]
        feeds = ["X", "W", "R", "B", "", "", "", ""]
        if with_state:
            ins += [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [dirs, batch, h]),
                    helper.make_tensor_value_info("c0", TensorProto.FLOAT, [dirs, batch, h])]
            feeds[5], feeds[6] = "h0", "c0"
        node = helper.make_node("DynamicQuantizeLSTM", feeds + ["W_scale", "W_zero_point", "R_scale", "R_zero_point"],
                                ["Y", "Y_h", "Y_c"], domain="com.microsoft", direction=direction, hidden_size=h)
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in ("Y", "Y_h", "Y_c")]
        m = helper.make_model(helper.make_graph([node], name, ins, outs, inits),
                              opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.microsoft", 1)])
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        for j in range(2):
            np.save(os.path.join(d, f"set{j}_input_0.npy"), (rng.standard_normal((seq, batch, k)) * (1 + j)).astype(np.float32))
            if with_state:
                np.save(os.path.join(d, f"set{j}_input_1.npy"), (rng.standard_normal((dirs, batch, h)) * 0.5).astype(np.float32))
                np.save(os.path.join(d, f"set{j}_input_2.npy"), (rng.standard_normal((dirs, batch, h)) * 0.5).astype(np.float32))


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


def add_reference_outputs(out, only=None):
    import glob

    import numpy as np
    import onnxruntime as ort

    # One intra-op thread: ONNX Runtime's DynamicQuantizeLSTM quantizes h per batch chunk when it
    # splits the batch over threads, and over the whole batch at one thread, which Lite follows.
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    for d in sorted(glob.glob(os.path.join(out, "*"))):
        if only and os.path.basename(d) not in only:
            continue
        s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
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
    if len(sys.argv) == 3 and sys.argv[1] == "--loop":  # only the Loop case, in place (no torch needed)
        write_computed_loop_model(sys.argv[2])
        add_reference_outputs(sys.argv[2], only={"loop_computed_condition"})
        return
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    subprocess.run(["/usr/bin/python3", os.path.abspath(__file__), "--export-torch", out], check=True)
    write_if_models(out)
    write_computed_if_model(out)
    write_computed_loop_model(out)
    write_dynamic_quantize_lstm_models(out)
    write_unknown_dims_model(out)
    declare_minus_one(os.path.join(out, "yolo_neck_opset13", "model.onnx"), "x")
    add_reference_outputs(out)


if __name__ == "__main__":
    main()
