#!/usr/bin/env python3
"""tests/fixtures/quant/ggml_dot_<type>.bin: llama.cpp's own CPU dot products (vec_dot) of random
rows of each listed weight type with activations quantized as llama.cpp quantizes them, written by
tools/ggml_dot_driver.c linked against libggml-cpu built from llama-cpp-python's sdist. The test
GgmlNumerics.MatrixProductsMatchLlamaCpps checks Spore's ggml numerics against them at
every SIMD level (NOTE [k-quants in ggml's order]).

    .venv-peers/bin/python tools/make_ggml_dot_fixtures.py [--isa avx2] [q6_K ...]

--isa picks the peer build (default avx2: the x86 kernels every AVX2 machine runs). Built natively on
an AVX-512 CPU, llama.cpp repacks q2_K (q2_K_8x8) and rounds it differently; the other types'
kernels have no AVX-512 variant, so native gives the same bits there."""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from llama_cpp_sdist import build_llama_tool, llama_build_dir, llama_cpp_source  # noqa: E402

PEERS = os.path.join(ROOT, "build", "peers")
OUT = os.path.join(ROOT, "tests", "fixtures", "quant")
# ggml_type ids (ggml.h): every block type llama-quantize writes
TYPE_IDS = {"q6_k": 14, "q5_k": 13, "q4_k": 12, "q3_k": 11, "q2_k": 10, "q4_0": 2, "iq4_nl": 20, "iq4_xs": 23,
            "q8_0": 8, "q5_0": 6, "q5_1": 7, "q4_1": 3, "mxfp4": 39, "nvfp4": 40, "q1_0": 41, "q2_0": 42,
            "tq1_0": 34, "tq2_0": 35, "iq2_xxs": 16, "iq2_xs": 17, "iq2_s": 22, "iq3_xxs": 18, "iq3_s": 21,
            "iq1_s": 19, "iq1_m": 29}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--isa", default="avx2", choices=["avx2", "native"])
    ap.add_argument("types", nargs="*", default=sorted(TYPE_IDS))
    a = ap.parse_args()
    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"])
    build = llama_build_dir(PEERS, a.isa)
    lib = os.path.join(build, "bin", "libggml-cpu.so")
    if not os.path.exists(lib):
        env = dict(os.environ)
        env.pop("OPENBLAS_CORETYPE", None)
        with open(build + ".log", "a") as log:
            build_llama_tool(src, build, "ggml-cpu", a.isa, env, log)
    driver = os.path.join(PEERS, f"ggml_dot_driver-{a.isa}")
    subprocess.run(["cc", "-O2", os.path.join(ROOT, "tools", "ggml_dot_driver.c"), "-I", os.path.join(src, "ggml", "include"),
                    "-L", os.path.join(build, "bin"), "-lggml", "-lggml-cpu", "-lggml-base", f"-Wl,-rpath,{os.path.join(build, 'bin')}",
                    "-o", driver], check=True)
    made = {}
    for t in a.types:
        path = os.path.join(OUT, f"ggml_dot_{t}.bin")
        subprocess.run([driver, str(TYPE_IDS[t]), path], check=True)
        made[t] = os.path.relpath(path, ROOT)
        print(f"wrote {made[t]}")
    versions = os.path.join(OUT, "versions.json")
    v = json.load(open(versions)) if os.path.exists(versions) else {}
    v["ggml_dot"] = {"llama.cpp": os.path.basename(os.path.dirname(os.path.dirname(src))), "isa": a.isa,
                     "files": sorted(set(v.get("ggml_dot", {}).get("files", [])) | set(made.values()))}
    with open(versions, "w") as f:
        f.write(json.dumps(v, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
