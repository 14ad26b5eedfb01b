#!/usr/bin/env python3
"""Writes the small fixture files of tests/data (tests/fixtures/data/).

The .npy files are written by NumPy itself, so the reader is checked against the real format
rather than against Spore's own writer. The IDX files follow the MNIST layout (big-endian
header, then the elements). Values follow simple formulas that the tests recompute:
  npy:  element i (row-major) = (i * 7 % 23 - 11) * scale, scale 0.25 for floats, 1 for integers,
        (i % 3 == 0) for bool
  idx images: element i = (i * 37 + 11) % 256 (uint8), shape [5, 4, 3]; labels: i % 10 for i in 0..4
Run from anywhere: python3 tools/make_data_fixtures.py
"""
import os
import struct

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "data")


def values(n, dtype):
    i = np.arange(n)
    if dtype == np.bool_:
        return i % 3 == 0
    v = i * 7 % 23 - 11
    if np.dtype(dtype).kind == "f":
        v = v * 0.25
    if np.dtype(dtype).kind == "u":
        v = v + 11
    return v.astype(dtype)


def npy(name, arr, version=None):
    path = os.path.join(OUT, name)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, arr, version=version, allow_pickle=False)


def main():
    os.makedirs(OUT, exist_ok=True)
    shape = (2, 3, 4)
    n = int(np.prod(shape))
    for code, dt in [("b1", np.bool_), ("i1", np.int8), ("u1", np.uint8), ("i4", np.int32),
                     ("i8", np.int64), ("f2", np.float16), ("f4", np.float32), ("f8", np.float64)]:
        npy(f"{code}_2x3x4.npy", values(n, dt).reshape(shape))
    # Big-endian files: the reader swaps bytes.
    npy("be_f4_2x3x4.npy", values(n, np.float32).reshape(shape).astype(">f4"))
    npy("be_i8_2x3x4.npy", values(n, np.int64).reshape(shape).astype(">i8"))
    # Format versions 2.0 and 3.0 (same data as f4_2x3x4.npy).
    npy("v2_f4_2x3x4.npy", values(n, np.float32).reshape(shape), version=(2, 0))
    npy("v3_f4_2x3x4.npy", values(n, np.float32).reshape(shape), version=(3, 0))
    # 0-d and empty arrays.
    npy("f8_scalar.npy", np.array(2.5, dtype=np.float64))
    npy("f4_0x3.npy", np.zeros((0, 3), dtype=np.float32))
    # Files the reader must refuse with a clear error.
    npy("fortran_f4_3x4.npy", np.asfortranarray(values(12, np.float32).reshape(3, 4)))
    npy("u8_unsupported.npy", np.arange(6, dtype=np.uint64))
    # Narrower integers, widened on load (int16 and uint16 to int32, uint32 to int64): the extremes.
    npy("i2_extremes.npy", np.array([-32768, -1, 0, 1, 32767], dtype="<i2"))
    npy("be_u2_extremes.npy", np.array([0, 1, 65535, 40000], dtype=">u2"))
    npy("u4_extremes.npy", np.array([0, 1, 4294967295, 3000000000], dtype="<u4"))
    npy("structured.npy", np.zeros(3, dtype=[("a", "<i4"), ("b", "<f4")]))
    # Two columns for NumpySource: 10 rows of [4] float32 and 10 int64 labels.
    npy("src_x.npy", values(40, np.float32).reshape(10, 4))
    npy("src_y.npy", np.arange(10, dtype=np.int64))

    # MNIST-style IDX: 5 images of 4x3 uint8, 5 labels.
    images = bytes((i * 37 + 11) % 256 for i in range(5 * 4 * 3))
    with open(os.path.join(OUT, "images_5x4x3.idx3-ubyte"), "wb") as f:
        f.write(struct.pack(">I", 0x00000803) + struct.pack(">III", 5, 4, 3) + images)
    with open(os.path.join(OUT, "labels_5.idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">I", 0x00000801) + struct.pack(">I", 5) + bytes(i % 10 for i in range(5)))
    with open(os.path.join(OUT, "labels_4.idx1-ubyte"), "wb") as f:
        f.write(struct.pack(">I", 0x00000801) + struct.pack(">I", 4) + bytes(i % 10 for i in range(4)))
    # float32 IDX (type 0x0D): big-endian elements.
    with open(os.path.join(OUT, "f4_2x2.idx"), "wb") as f:
        f.write(bytes([0, 0, 0x0D, 2]) + struct.pack(">II", 2, 2) + struct.pack(">4f", 1.5, -2.0, 0.25, 8.0))


if __name__ == "__main__":
    main()
