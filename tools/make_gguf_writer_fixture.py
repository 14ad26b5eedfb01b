#!/usr/bin/env python3
"""Writes tests/fixtures/gguf_writer/reference.gguf with llama.cpp's own writer (the `gguf` PyPI
package, gguf-py), so tests/io/gguf_writer_test.cc can check that Spore's GgufWriter writes the
same bytes for the same keys and tensors: every metadata type, arrays of several element types,
a custom alignment (64), and tensors whose sizes are not multiples of it (padding).

Rerun: /work/main/.venv-peers/bin/pip install gguf==0.19.0
       /work/main/.venv-peers/bin/python tools/make_gguf_writer_fixture.py
The C++ test builds the identical file from the same values listed there; keep the two in step.
"""
import os
import sys

import numpy as np
import gguf
from gguf import GGUFValueType as T

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "gguf_writer", "reference.gguf")


def main() -> int:
    w = gguf.GGUFWriter(OUT, "llama")  # writes general.architecture first
    w.add_custom_alignment(64)
    w.add_key_value("t.u8", 200, T.UINT8)
    w.add_key_value("t.i8", -100, T.INT8)
    w.add_key_value("t.u16", 60000, T.UINT16)
    w.add_key_value("t.i16", -30000, T.INT16)
    w.add_key_value("t.u32", 4000000000, T.UINT32)
    w.add_key_value("t.i32", -2000000000, T.INT32)
    w.add_key_value("t.f32", 0.1, T.FLOAT32)
    w.add_key_value("t.bool", True, T.BOOL)
    w.add_key_value("t.string", "h\u00e9llo \u4f60\u597d", T.STRING)
    w.add_key_value("t.u64", 2**63 + 5, T.UINT64)
    w.add_key_value("t.i64", -(2**62), T.INT64)
    w.add_key_value("t.f64", 1e-300, T.FLOAT64)
    w.add_key_value("t.strings", ["a", "", "<|im_end|>"], T.ARRAY, T.STRING)
    w.add_key_value("t.i32s", [1, -2, 3], T.ARRAY, T.INT32)
    w.add_key_value("t.f32s", [0.5, -1.25], T.ARRAY, T.FLOAT32)
    w.add_key_value("t.bools", [True, False], T.ARRAY, T.BOOL)
    # Tensors: values i * 0.25 - 1 (float32), which the C++ test recomputes.
    a = (np.arange(15, dtype=np.float32) * np.float32(0.25) - np.float32(1)).reshape(3, 5)
    w.add_tensor("a.f32", a)  # 60 bytes: padded to 64
    b = (np.arange(7, dtype=np.float32) * np.float32(0.25) - np.float32(1)).astype(np.float16)
    w.add_tensor("b.f16", b)  # 14 bytes
    q = gguf.quants.quantize(np.arange(64, dtype=np.float32).reshape(2, 32) * np.float32(0.25) - np.float32(1),
                             gguf.GGMLQuantizationType.Q8_0)
    w.add_tensor("c.q8_0", q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)  # 2 rows of 34 bytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {os.path.normpath(OUT)} ({os.path.getsize(OUT)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
