#!/usr/bin/env python3
"""Checks Spore's ONNX exports against ONNX Runtime and writes its outputs as fixtures
(NOTE [ONNX] in docs/design.md).

For each folder under DIR holding model.onnx and input_<k>.npy (written by the
onnx_export_models program from tests/lite/onnx_test_models.h), runs the ONNX checker (full
check, with shape inference) and ONNX Runtime on the inputs, and writes ort_output_<k>.npy.
tests/lite/onnx_export_test.cc compares the framework's and Lite's outputs with them.

Rerun (venv: bash scripts/install-py-peers.sh onnx):
  build/release/tests/onnx_export_models tests/fixtures/onnx/export
  .venv-peers/bin/python tools/onnx_check.py tests/fixtures/onnx/export
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    for name in sorted(os.listdir(root)):
        d = os.path.join(root, name)
        path = os.path.join(d, "model.onnx")
        if not os.path.isfile(path):
            continue
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        feeds = {}
        for k, i in enumerate(sess.get_inputs()):
            feeds[i.name] = np.load(os.path.join(d, f"input_{k}.npy"))
        outs = sess.run(None, feeds)
        for k, o in enumerate(outs):
            np.save(os.path.join(d, f"ort_output_{k}.npy"), o)
        ops = sorted({n.op_type for n in model.graph.node})
        print(f"{name}: opset {model.opset_import[0].version}, {len(model.graph.node)} nodes ({' '.join(ops)}); "
              f"outputs {[o.shape for o in outs]}")


if __name__ == "__main__":
    main()
