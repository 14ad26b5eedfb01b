#!/usr/bin/env python3
"""Writes the safetensors fixtures of tests/io with the reference implementation (the `safetensors`
package, `pip install safetensors numpy`), and checks files Spore wrote.

  python3 tools/make_io_fixtures.py                 # (re)writes tests/fixtures/io/*.safetensors
  python3 tools/make_io_fixtures.py --check FILE    # loads a Spore-written file, prints its tensors

The values are fixed here and repeated in tests/io/safetensors_fixture_test.cc, which checks them
without Python. Every value is exact in its dtype, so the test compares with ==.
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np
import safetensors
from safetensors import TensorSpec

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures", "io"))


def bf16_bits(values):
    """float32 -> bfloat16 bit patterns; the values are chosen exact in bfloat16 (no rounding)."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "fixture bfloat16 values must be exact"
    return (bits >> 16).astype(np.uint16)


def fixture_tensors():
    """name -> (safetensors dtype name, numpy array holding the bytes, logical shape)."""
    f32 = (np.arange(6, dtype=np.float32) * 0.5 - 1.0).reshape(2, 3)
    t = {
        "f32": ("float32", f32, f32.shape),
        "f64": ("float64", np.array([1.0 / 3.0, -2.5, 1e300], dtype=np.float64), (3,)),
        # max normal, smallest subnormal (2^-24), a negative and an inf
        "f16": ("float16", np.array([0.5, -1.5, 65504.0, 2.0**-24, np.inf], dtype=np.float16), (5,)),
        "bf16": ("bfloat16", bf16_bits([1.0, -2.0, 3.140625, 2.0**100]), (2, 2)),
        "i64": ("int64", np.array([-(2**62), 0, 2**62 + 1], dtype=np.int64), (3,)),
        "i32": ("int32", np.array([[-1, 2**31 - 1], [-(2**31), 7]], dtype=np.int32), (2, 2)),
        "i8": ("int8", np.array([-128, -1, 0, 127], dtype=np.int8), (4,)),
        "u8": ("uint8", np.array([0, 1, 200, 255], dtype=np.uint8), (4,)),
        "flag": ("bool", np.array([True, False, False, True, True]), (5,)),
        "scalar": ("float32", np.array(42.0, dtype=np.float32), ()),
        "empty": ("float32", np.zeros((0, 3), dtype=np.float32), (0, 3)),
        "a.b/c": ("float32", np.array([[[7.0]]], dtype=np.float32), (1, 1, 1)),
    }
    return t


def write_fixtures():
    os.makedirs(OUT, exist_ok=True)
    tensors = fixture_tensors()
    specs = {}
    keep = []
    for name, (dtype, arr, shape) in tensors.items():
        arr = np.ascontiguousarray(arr)
        keep.append(arr)
        specs[name] = TensorSpec(dtype=dtype, shape=list(shape), data_ptr=arr.ctypes.data, data_len=arr.nbytes)
    # One metadata key: the reference keeps metadata in a hash map, so with several keys its byte
    # order is not fixed, and the test compares Spore's writer with this file byte for byte.
    path = os.path.join(OUT, "reference_dtypes.safetensors")
    safetensors.serialize_file(specs, path, metadata={"producer": "make_io_fixtures.py"})
    data = open(path, "rb").read()
    print(f"{path}: {len(data)} bytes, sha256 {hashlib.sha256(data).hexdigest()}")


def check(path):
    """Loads every tensor with the reference reader and prints it (bfloat16 decoded by hand,
    since numpy has no bfloat16 type)."""
    raw = open(path, "rb").read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + n])
    with safetensors.safe_open(path, framework="numpy") as f:
        print("metadata:", f.metadata())
        for name in f.keys():
            dtype = f.get_slice(name).get_dtype()
            if dtype == "BF16":
                b, e = header[name]["data_offsets"]
                bits = np.frombuffer(raw[8 + n + b : 8 + n + e], dtype=np.uint16).astype(np.uint32)
                arr = (bits << 16).view(np.float32).reshape(header[name]["shape"])
            else:
                arr = f.get_tensor(name)
            print(f"{name}: {dtype} {list(arr.shape)} {arr.tolist()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", metavar="FILE", help="load a Spore-written file with the reference reader")
    args = ap.parse_args()
    if args.check:
        check(args.check)
    else:
        write_fixtures()
    return 0


if __name__ == "__main__":
    sys.exit(main())
