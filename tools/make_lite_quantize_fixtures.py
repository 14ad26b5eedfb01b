#!/usr/bin/env python3
"""Fixtures of `spore lite quantize` and com.microsoft DynamicQuantizeMatMul (NOTE [Dynamic int8
products]), with ONNX Runtime's outputs: tests/fixtures/onnx/quantize/.

- mlp.onnx: a float32 model with the products people quantize: a MatMul over a 3-D input with a
  bias Add, a Relu, a Reshape, and a Gemm (transB = 1, alpha = 0.5, a bias C).
- mlp_int8.onnx: the same model with both products as DynamicQuantizeMatMul over int8 weights,
  quantized here in numpy by the rule `spore lite quantize` follows (per column: scale =
  max|w| / 127, q = round half to even of w / scale), so Spore's file must run to the same outputs.
- uint8.onnx: one DynamicQuantizeMatMul with a uint8 weight and per-column zero points (the form
  quantize_dynamic writes with weight_type=QUInt8), which Lite computes by its definition.
- x.npy (input), float.npy (ONNX Runtime on mlp.onnx), int8.npy (on mlp_int8.onnx), uint8_x.npy,
  uint8_y.npy (on uint8.onnx).
- cnn.onnx: convolutions as people quantize them (3x3 with a bias, 3x3 stride 2 without, a grouped
  3x3, a 1x1 with a bias) and a Gemm head; cnn_dynamic.onnx: the same quantized in numpy as
  `spore lite quantize` does it (each Conv as DynamicQuantizeLinear + ConvInteger + Cast + Mul (+ Add),
  the Gemm as DynamicQuantizeMatMul), cnn_qdq.onnx: as `--format qdq` does it (each weight an int8
  initializer read through a per-channel DequantizeLinear); cnn_x.npy, and ONNX Runtime's outputs
  cnn_float.npy, cnn_dynamic.npy, cnn_qdq.npy.

Rerun: bash scripts/install-py-peers.sh onnx; .venv-peers/bin/python tools/make_lite_quantize_fixtures.py
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "onnx", "quantize")


def per_column(w):
    """int8 weight and per-column scales: the rule of quantize_weight_per_column."""
    scale = np.abs(w).max(axis=0) / np.float32(127)
    scale = np.where(scale == 0, np.float32(1), scale).astype(np.float32)
    q = np.clip(np.rint(w / scale), -127, 127).astype(np.int8)
    return q, scale


def mlp(quantized):
    rng = np.random.default_rng(5)
    w1 = (rng.standard_normal((64, 96)) * 0.1).astype(np.float32)
    b1 = (rng.standard_normal(96) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((32, 96)) * 0.1).astype(np.float32)  # Gemm's B with transB = 1
    c2 = (rng.standard_normal(32) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(b1, "b1"), numpy_helper.from_array(np.array([-1, 96], np.int64), "rows")]
    nodes = []
    if quantized:
        q1, s1 = per_column(w1)
        q2, s2 = per_column(np.ascontiguousarray(w2.T))
        inits += [numpy_helper.from_array(q1, "w1_int8"), numpy_helper.from_array(s1, "w1_scale"),
                  numpy_helper.from_array(q2, "w2_int8"), numpy_helper.from_array((s2 * np.float32(0.5)).astype(np.float32), "w2_scale"),
                  numpy_helper.from_array(c2, "c2")]
        nodes.append(helper.make_node("DynamicQuantizeMatMul", ["x", "w1_int8", "w1_scale"], ["h"], domain="com.microsoft"))
    else:
        inits += [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(c2, "c2")]
        nodes.append(helper.make_node("MatMul", ["x", "w1"], ["h"]))
    nodes += [helper.make_node("Add", ["h", "b1"], ["hb"]), helper.make_node("Relu", ["hb"], ["r"]),
              helper.make_node("Reshape", ["r", "rows"], ["r2"])]
    if quantized:
        nodes.append(helper.make_node("DynamicQuantizeMatMul", ["r2", "w2_int8", "w2_scale", "", "c2"], ["y"], domain="com.microsoft"))
    else:
        nodes.append(helper.make_node("Gemm", ["r2", "w2", "c2"], ["y"], transB=1, alpha=0.5))
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [10, 32])], inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if quantized else [])
    return helper.make_model(g, opset_imports=opsets, producer_name="make_lite_quantize_fixtures")


def per_channel(w, axis):
    """int8 weight and one scale per index of `axis`, by per_column's rule on [rest, channels]."""
    moved = np.moveaxis(w, axis, -1)
    q, scale = per_column(moved.reshape(-1, moved.shape[-1]))
    return np.ascontiguousarray(np.moveaxis(q.reshape(moved.shape), -1, axis)), scale


CNN_CONVS = [  # name, weight shape, attributes, bias
    ("c1", (8, 3, 3, 3), dict(pads=[1, 1, 1, 1]), True),
    ("c2", (16, 8, 3, 3), dict(pads=[1, 1, 1, 1], strides=[2, 2]), False),
    ("c3", (16, 4, 3, 3), dict(pads=[1, 1, 1, 1], group=4), True),
    ("c4", (12, 16, 1, 1), dict(), True),
]


def cnn(form):
    """form: "float", "dynamic" or "qdq"."""
    rng = np.random.default_rng(11)
    inits, nodes = [], []
    x = "x"
    for name, shape, attrs, has_bias in CNN_CONVS:
        w = (rng.standard_normal(shape) * 0.2).astype(np.float32)
        b = (rng.standard_normal(shape[0]) * 0.1).astype(np.float32) if has_bias else None
        out = name + "_y"
        if form == "float":
            inits.append(numpy_helper.from_array(w, name + "_w"))
            ins = [x, name + "_w"]
            if has_bias:
                inits.append(numpy_helper.from_array(b, name + "_b"))
                ins.append(name + "_b")
            nodes.append(helper.make_node("Conv", ins, [out], **attrs))
        elif form == "qdq":
            q, scale = per_channel(w, 0)
            inits += [numpy_helper.from_array(q, name + "_wq"), numpy_helper.from_array(scale, name + "_ws")]
            nodes.append(helper.make_node("DequantizeLinear", [name + "_wq", name + "_ws"], [name + "_wd"], axis=0))
            ins = [x, name + "_wd"]
            if has_bias:
                inits.append(numpy_helper.from_array(b, name + "_b"))
                ins.append(name + "_b")
            nodes.append(helper.make_node("Conv", ins, [out], **attrs))
        else:
            q, scale = per_channel(w, 0)
            inits += [numpy_helper.from_array(q, name + "_wq"),
                      numpy_helper.from_array(scale.reshape(-1, 1, 1), name + "_ws")]
            nodes += [helper.make_node("DynamicQuantizeLinear", [x], [name + "_xq", name + "_xs", name + "_xz"]),
                      helper.make_node("ConvInteger", [name + "_xq", name + "_wq", name + "_xz"], [name + "_i"], **attrs),
                      helper.make_node("Cast", [name + "_i"], [name + "_f"], to=TensorProto.FLOAT),
                      helper.make_node("Mul", [name + "_xs", name + "_ws"], [name + "_s"])]
            if has_bias:
                inits.append(numpy_helper.from_array(b.reshape(-1, 1, 1), name + "_b"))
                nodes += [helper.make_node("Mul", [name + "_f", name + "_s"], [name + "_m"]),
                          helper.make_node("Add", [name + "_m", name + "_b"], [out])]
            else:
                nodes.append(helper.make_node("Mul", [name + "_f", name + "_s"], [out]))
        nodes.append(helper.make_node("Relu", [out], [name + "_r"]))
        x = name + "_r"
    wg = (rng.standard_normal((10, 12 * 8 * 8)) * 0.05).astype(np.float32)  # Gemm's B with transB = 1
    cg = (rng.standard_normal(10) * 0.1).astype(np.float32)
    nodes.append(helper.make_node("Flatten", [x], ["flat"]))
    if form == "float":
        inits += [numpy_helper.from_array(wg, "g_w"), numpy_helper.from_array(cg, "g_c")]
        nodes.append(helper.make_node("Gemm", ["flat", "g_w", "g_c"], ["y"], transB=1))
    elif form == "qdq":
        q, scale = per_channel(wg, 0)
        inits += [numpy_helper.from_array(q, "g_wq"), numpy_helper.from_array(scale, "g_ws"),
                  numpy_helper.from_array(cg, "g_c")]
        nodes += [helper.make_node("DequantizeLinear", ["g_wq", "g_ws"], ["g_wd"], axis=0),
                  helper.make_node("Gemm", ["flat", "g_wd", "g_c"], ["y"], transB=1)]
    else:
        q, scale = per_column(np.ascontiguousarray(wg.T))
        inits += [numpy_helper.from_array(q, "g_wq"), numpy_helper.from_array(scale, "g_ws"),
                  numpy_helper.from_array(cg, "g_c")]
        nodes.append(helper.make_node("DynamicQuantizeMatMul", ["flat", "g_wq", "g_ws", "", "g_c"], ["y"],
                                      domain="com.microsoft"))
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 16, 16])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 10])], inits)
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("com.microsoft", 1)] if form == "dynamic" else [])
    return helper.make_model(g, opset_imports=opsets, producer_name="make_lite_quantize_fixtures")


def uint8_model():
    rng = np.random.default_rng(9)
    w = rng.integers(0, 256, size=(48, 24)).astype(np.uint8)
    zp = rng.integers(100, 156, size=24).astype(np.uint8)
    scale = (rng.random(24) * 0.01 + 0.001).astype(np.float32)
    bias = (rng.standard_normal(24) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zp, "zp"),
             numpy_helper.from_array(bias, "bias")]
    node = helper.make_node("DynamicQuantizeMatMul", ["x", "w", "s", "zp", "bias"], ["y"], domain="com.microsoft")
    g = helper.make_graph([node], "uint8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 48])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 24])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])


def run(model, feeds):
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


def main():
    os.makedirs(OUT, exist_ok=True)
    x = (np.random.default_rng(3).standard_normal((2, 5, 64)) * 2).astype(np.float32)
    f, q = mlp(False), mlp(True)
    onnx.checker.check_model(f)
    onnx.save(f, os.path.join(OUT, "mlp.onnx"))
    onnx.save(q, os.path.join(OUT, "mlp_int8.onnx"))
    np.save(os.path.join(OUT, "x.npy"), x)
    yf, yq = run(f, {"x": x}), run(q, {"x": x})
    np.save(os.path.join(OUT, "float.npy"), yf)
    np.save(os.path.join(OUT, "int8.npy"), yq)
    u = uint8_model()
    onnx.save(u, os.path.join(OUT, "uint8.onnx"))
    ux = (np.random.default_rng(4).standard_normal((3, 48)) * 3 - 1).astype(np.float32)
    np.save(os.path.join(OUT, "uint8_x.npy"), ux)
    np.save(os.path.join(OUT, "uint8_y.npy"), run(u, {"x": ux}))
    cx = np.random.default_rng(12).standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.save(os.path.join(OUT, "cnn_x.npy"), cx)
    for form in ("float", "dynamic", "qdq"):
        m = cnn(form)
        if form != "dynamic":
            onnx.checker.check_model(m)
        onnx.save(m, os.path.join(OUT, "cnn.onnx" if form == "float" else f"cnn_{form}.onnx"))
        np.save(os.path.join(OUT, f"cnn_{form}.npy"), run(m, {"x": cx}))
    err = np.abs(yq - yf).max() / np.abs(yf).max()
    print(f"wrote {OUT}: int8 against float32, max error / max |y| = {err:.4f}", file=sys.stderr)


if __name__ == "__main__":
    main()
