"""Fixtures of the quantization types (NOTE [Quantization types]): independent references for
Spore's dequantisers and matmul_q kernels.

1. tests/fixtures/quant/blocks.gguf: for every type Spore reads, random blocks (every bit pattern
   is a valid block; scales set to sane float16 values) as tensor "<type>" and the `gguf`
   package's own numpy dequantisation of them (gguf.quants.dequantize) as F32 tensor
   "<type>.expected". Spore must reproduce those floats bit for bit.
2. tests/fixtures/quant/llama-<ftype>.gguf: a tiny random-weight llama model (hidden 160, not a
   multiple of 256, so llama.cpp's per-tensor fallbacks such as Q4_K -> Q5_0 apply as they do for
   Qwen2.5-0.5B's 896 and SmolLM2's 576; MLP 256, so ffn_down keeps the k-quant) written in F32 by
   gguf-py and quantised by llama.cpp's own `llama-quantize` (built from llama-cpp-python's sdist
   by this script, only that target, into build/peers/) to each ftype; and
   tests/fixtures/quant/llama_reference.json with, per file: every tensor's type and the SHA-256
   of gguf.quants' float32 dequantisation (Spore must match exactly), the logits of a float64
   forward pass on those dequantised weights whose linear-layer inputs are rounded to q8 blocks of
   32 as matmul_q rounds them (d = amax / 127 in float32, NOTE [Quantized kernels]), and the
   greedy tokens of that forward with the smallest top-2 margin seen.
The versions of gguf, numpy and llama.cpp and every file's SHA-256 are recorded in
tests/fixtures/quant/versions.json.

Run with the peers' venv (scripts/install-py-peers.sh llm, or `pip install gguf numpy`) and the
sdist's own gguf-py first on the path (PyPI's gguf 0.19 does not know Q2_0):
    PYTHONPATH=build/peers/llama_cpp_python-0.3.36/vendor/llama.cpp/gguf-py \
    .venv-peers/bin/python tools/make_quant_fixtures.py [--llama-quantize PATH]
"""
import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys

from llama_cpp_sdist import llama_cpp_source

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "quant")
PEERS = os.path.join(ROOT, "build", "peers")
WORK = os.path.join(ROOT, "build", "quant-fixtures")

# llama-quantize's ftype names: the types llama.cpp users download, and the ones Spore reads
# (IQ1/IQ2/IQ3 need an importance matrix: not made here).
# Q1_0 / Q2_0 are not among them: llama-quantize has no fallback type for them, and refuses the
# 160-wide rows (tools/make_perplexity_fixtures.py runs Q2_0 on SmolLM2, whose 576 divides by 64).
FTYPES = ["Q2_K", "Q3_K_M", "Q4_K_M", "Q5_K_M", "Q6_K", "Q5_0", "Q5_1", "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "Q4_0"]

# The model: llama, 2 layers, hidden 160 (5 heads of 32, 1 KV head), MLP 256, vocabulary 256.
HIDDEN, HEADS, KV_HEADS, FFN, LAYERS, VOCAB, CTX = 160, 5, 1, 256, 2, 256, 64
EPS, THETA = 1e-5, 10000.0
PROMPT = [1, 17, 200, 33, 94, 5, 128, 61]
GREEDY = 8


def sha256_file(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


# ---- 1. blocks --------------------------------------------------------------------------------
# Where each type keeps its float16 scales (d, second scale / min), to be set to sane values.
SCALES = {"Q1_0": (0, None), "Q2_0": (0, None), "Q4_0": (0, None), "Q4_1": (0, 2), "Q5_0": (0, None), "Q5_1": (0, 2), "Q8_0": (0, None),
          "Q2_K": (80, 82), "Q3_K": (108, None), "Q4_K": (0, 2), "Q5_K": (0, 2), "Q6_K": (208, None),
          "IQ4_NL": (0, None), "IQ4_XS": (0, None), "TQ1_0": (52, None), "TQ2_0": (64, None),
          "IQ2_XXS": (0, None), "IQ2_XS": (0, None), "IQ2_S": (0, None), "IQ3_XXS": (0, None), "IQ3_S": (0, None),
          "IQ1_S": (0, None)}


BLOCK_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
               "IQ4_NL", "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S",
               "IQ1_S", "IQ1_M", "NVFP4", "Q1_0", "Q2_0"]  # new types last: the earlier ones keep their bytes


def dequantize_any(raw, qt):
    """gguf.quants' dequantisation, and for the types it has no class for (Q8_K, Q1_0, Q2_0) their
    layouts' formulas from ggml-common.h / ggml-quants.c in numpy."""
    import gguf
    from gguf.quants import dequantize
    T = gguf.GGMLQuantizationType
    block, nbytes = gguf.GGML_QUANT_SIZES[qt]
    blocks = np.asarray(raw, np.uint8).reshape(-1, nbytes)
    if qt == T.Q8_K:  # f32 d, int8 q[256]
        d = blocks[:, 0:4].copy().view(np.float32)
        return (d * blocks[:, 4:260].view(np.int8).astype(np.float32)).reshape(-1)
    if qt in (T.Q1_0, T.Q2_0):  # f16 d, then 1-bit signs (bit j % 8 of byte j / 8) or 2-bit q - 1
        d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32)
        bits = 1 if qt == T.Q1_0 else 2
        per = 8 // bits
        q = (blocks[:, 2:, None] >> (bits * np.arange(per, dtype=np.uint8))) & ((1 << bits) - 1)
        q = q.reshape(len(blocks), block).astype(np.float32)
        return (d * (2 * q - 1 if qt == T.Q1_0 else q - 1)).reshape(-1)
    return dequantize(raw, qt).reshape(-1)


def random_blocks(gguf, name, n_blocks, rng):
    qt = gguf.GGMLQuantizationType[name]
    block, nbytes = gguf.GGML_QUANT_SIZES[qt]
    raw = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
    if name in SCALES:
        d_at, m_at = SCALES[name]
        for b in range(n_blocks):
            raw[b, d_at:d_at + 2] = np.array([0.01 + 0.002 * (b % 5)], np.float16).view(np.uint8)
            if m_at is not None:
                raw[b, m_at:m_at + 2] = np.array([0.003 * ((b % 3) - 1)], np.float16).view(np.uint8)
    elif name == "Q8_K":
        for b in range(n_blocks):
            raw[b, 0:4] = np.array([0.001 * (1 + b % 4)], np.float32).view(np.uint8)
    elif name == "MXFP4":
        raw[:, 0] = 118 + np.arange(n_blocks) % 8
    elif name == "NVFP4":  # UE4M3 scales, exponent 3..5 (2^-4 .. 2^-2), every mantissa
        for s in range(4):
            raw[:, s] = ((3 + (np.arange(n_blocks) + s) % 3) << 3) | ((np.arange(n_blocks) + 3 * s) % 8)
    elif name == "IQ1_M":  # the float16 d's four nibbles sit in the top of the four scale words
        for b in range(n_blocks):
            d = int(np.array([0.01 + 0.002 * (b % 5)], np.float16).view(np.uint16)[0])
            for w in range(4):
                raw[b, 49 + 2 * w] = (raw[b, 49 + 2 * w] & 0x0F) | (((d >> (4 * w)) & 0xF) << 4)
    return raw, block


def make_blocks(gguf):
    rng = np.random.default_rng(27)
    w = gguf.GGUFWriter(os.path.join(OUT, "blocks.gguf"), "spore-quant-blocks")
    for name in BLOCK_TYPES:
        qt = gguf.GGMLQuantizationType[name]
        rows = 2
        n_blocks = {256: 6, 128: 3, 64: 6}.get(gguf.GGML_QUANT_SIZES[qt][0], 12)  # per row: k = 1536 or 384
        raw, block = random_blocks(gguf, name, rows * n_blocks, rng)
        raw = raw.reshape(rows, -1)
        expected = dequantize_any(raw, qt).astype(np.float32).reshape(rows, n_blocks * block)
        w.add_tensor(name.lower(), raw, raw_dtype=qt)
        w.add_tensor(name.lower() + ".expected", expected)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def make_fuzz_seeds(gguf):
    """One small GGUF per type for the gguf fuzz target's seed corpus: 2 rows of one block."""
    rng = np.random.default_rng(5)
    corpus = os.path.join(ROOT, "tests", "fuzz", "corpus", "gguf")
    for name in BLOCK_TYPES:
        qt = gguf.GGMLQuantizationType[name]
        raw, _ = random_blocks(gguf, name, 2, rng)
        w = gguf.GGUFWriter(os.path.join(corpus, f"type_{name.lower()}.gguf"), "spore-fuzz-seed")
        w.add_tensor("w", raw.reshape(2, -1), raw_dtype=qt)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


# ---- 2. a tiny llama through llama-quantize ----------------------------------------------------
def llama_quantize_binary(path):
    """llama.cpp's quantiser: `path`, else the llama-quantize tool when build/peers has it, else
    tools/peers/llama_quantize_driver.cpp (llama_model_quantize, the function llama-quantize calls,
    with the library's default parameters) built against libllama from llama-cpp-python's sdist:
    the tool's target also needs llama.cpp's whole common library, slow to build on a small
    machine, and adds only argument parsing."""
    if path:
        return path
    tool = os.path.join(PEERS, "llama-build", "bin", "llama-quantize")
    if os.path.exists(tool):
        return tool
    driver = os.path.join(PEERS, "lq", "llama_quantize_driver")
    if os.path.exists(driver):
        return driver
    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"])
    build = os.path.join(PEERS, "llama-build")
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    subprocess.run(["nice", "cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_TOOLS=ON",
                    "-DGGML_OPENMP=OFF"], check=True, env=env)
    subprocess.run(["nice", "cmake", "--build", build, "-j2", "--target", "llama"], check=True, env=env)
    os.makedirs(os.path.dirname(driver), exist_ok=True)
    lib = os.path.join(build, "bin")
    subprocess.run(["g++", "-O1", "-std=c++17", "-I", os.path.join(src, "include"), "-I", os.path.join(src, "ggml", "include"),
                    os.path.join(ROOT, "tools", "peers", "llama_quantize_driver.cpp"), "-o", driver, "-L" + lib,
                    "-lllama", "-lggml", "-lggml-base", "-Wl,-rpath," + lib], check=True)
    return driver


def base_weights():
    rng = np.random.default_rng(2027)
    hd = HIDDEN // HEADS

    def w(*shape, scale=0.08):
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    t = {"token_embd.weight": w(VOCAB, HIDDEN, scale=0.5), "output_norm.weight": 1 + w(HIDDEN, scale=0.1),
         "output.weight": w(VOCAB, HIDDEN)}
    for i in range(LAYERS):
        p = f"blk.{i}."
        t[p + "attn_norm.weight"] = 1 + w(HIDDEN, scale=0.1)
        t[p + "ffn_norm.weight"] = 1 + w(HIDDEN, scale=0.1)
        t[p + "attn_q.weight"] = w(HEADS * hd, HIDDEN)
        t[p + "attn_k.weight"] = w(KV_HEADS * hd, HIDDEN)
        t[p + "attn_v.weight"] = w(KV_HEADS * hd, HIDDEN)
        t[p + "attn_output.weight"] = w(HIDDEN, HEADS * hd)
        t[p + "ffn_gate.weight"] = w(FFN, HIDDEN)
        t[p + "ffn_up.weight"] = w(FFN, HIDDEN)
        t[p + "ffn_down.weight"] = w(HIDDEN, FFN, scale=0.06)
    return t


def write_base(gguf, path):
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("spore-quant-tiny-llama")
    w.add_context_length(CTX)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_freq_base(THETA)
    w.add_rope_dimension_count(HIDDEN // HEADS)
    w.add_vocab_size(VOCAB)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    # No tokenizer: the tests feed token ids (a GGUF without one loads, NOTE [LLM engine]).
    for name, a in base_weights().items():
        w.add_tensor(name, a)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def q8_round(x):
    """Rows of x (float64) as matmul_q's activation blocks hold them: per 32 values d = amax / 127
    and q = rint(x * 127 / amax), both in float32 as the kernel forms them."""
    xf = x.astype(np.float32).reshape(x.shape[0], -1, 32)
    amax = np.abs(xf).max(axis=-1, keepdims=True)
    d = amax / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(amax > 0, np.float32(127) / amax, np.float32(0)).astype(np.float32)
    q = np.rint(xf * inv)
    return (d.astype(np.float64) * q).reshape(x.shape)


def forward(weights, types, tokens):
    """Float64 llama forward (llama.cpp's layout: adjacent-pair rope) on dequantised weights; the
    input of each product with a block-quantised weight rounded as matmul_q rounds it."""
    hd = HIDDEN // HEADS

    def lin(x, name):
        xin = q8_round(x) if types[name] not in ("F32", "F16", "BF16") else x
        return xin @ weights[name].T

    def norm(x, name):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * weights[name]

    def rope(x):  # [S, H, hd], pairs (2i, 2i + 1)
        pos = np.arange(x.shape[0])[:, None]
        inv = THETA ** (-np.arange(0, hd, 2) / hd)
        ang = pos * inv[None, :]
        c, s = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * c - x1 * s
        out[..., 1::2] = x0 * s + x1 * c
        return out

    x = weights["token_embd.weight"][tokens]
    S = len(tokens)
    for i in range(LAYERS):
        p = f"blk.{i}."
        h = norm(x, p + "attn_norm.weight")
        q = rope(lin(h, p + "attn_q.weight").reshape(S, HEADS, hd))
        k = rope(lin(h, p + "attn_k.weight").reshape(S, KV_HEADS, hd))
        v = lin(h, p + "attn_v.weight").reshape(S, KV_HEADS, hd)
        att = np.empty((S, HEADS, hd))
        for hh in range(HEADS):
            kv = hh // (HEADS // KV_HEADS)
            sc = q[:, hh, :] @ k[:, kv, :].T / np.sqrt(hd)
            sc = np.where(np.tril(np.ones((S, S), bool)), sc, -np.inf)
            pr = np.exp(sc - sc.max(-1, keepdims=True))
            pr /= pr.sum(-1, keepdims=True)
            att[:, hh, :] = pr @ v[:, kv, :]
        x = x + lin(att.reshape(S, -1), p + "attn_output.weight")
        h = norm(x, p + "ffn_norm.weight")
        g, u = lin(h, p + "ffn_gate.weight"), lin(h, p + "ffn_up.weight")
        x = x + lin(g / (1 + np.exp(-g)) * u, p + "ffn_down.weight")
    return lin(norm(x, "output_norm.weight"), "output.weight")


def reference_of(gguf, path):
    r = gguf.GGUFReader(path)
    weights, types, tensors = {}, {}, {}
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape.tolist())]
        f = dequantize_any(np.asarray(t.data), t.tensor_type).astype(np.float32).reshape(shape)
        weights[t.name] = f.astype(np.float64)
        types[t.name] = t.tensor_type.name
        tensors[t.name] = {"type": t.tensor_type.name, "sha256": hashlib.sha256(f.tobytes()).hexdigest()}
    logits = forward(weights, types, PROMPT)
    tokens, margins = list(PROMPT), []
    for _ in range(GREEDY):
        last = forward(weights, types, tokens)[-1]
        top = np.sort(last)[-2:]
        margins.append(float(top[1] - top[0]))
        tokens.append(int(np.argmax(last)))
    margin = min(margins)
    rounded = [[float(f"{v:.8g}") for v in row] for row in logits]  # 8 digits: far below the test's tolerance
    return {"tensors": tensors, "prompt": PROMPT, "logits": rounded, "greedy": tokens[len(PROMPT):],
            "greedy_margins": margins, "greedy_min_margin": margin}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-quantize", help="an existing llama-quantize binary")
    a = ap.parse_args()
    import gguf
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(WORK, exist_ok=True)
    make_blocks(gguf)
    make_fuzz_seeds(gguf)
    quantize = llama_quantize_binary(a.llama_quantize)
    base = os.path.join(WORK, "llama-f32.gguf")
    write_base(gguf, base)
    refs = {}
    for ft in FTYPES:
        out = os.path.join(OUT, f"llama-{ft.lower()}.gguf")
        subprocess.run([quantize, base, out, ft], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        refs[ft.lower()] = reference_of(gguf, out)
        print(f"{ft}: {os.path.getsize(out)} bytes, types "
              f"{sorted(set(v['type'] for v in refs[ft.lower()]['tensors'].values()))}, "
              f"greedy margin {refs[ft.lower()]['greedy_min_margin']:.4f}")
    with open(os.path.join(OUT, "llama_reference.json"), "w") as f:
        json.dump(refs, f, indent=0)
    where = os.path.relpath(os.path.dirname(os.path.dirname(gguf.__file__)), ROOT)
    gguf_version = (f"gguf-py of {where}" if not where.startswith("..") and "site-packages" not in where
                    else __import__("importlib.metadata").metadata.version("gguf"))
    versions = {"gguf": gguf_version, "numpy": np.__version__,
                "quantizer": os.path.relpath(quantize, ROOT),
                "llama_cpp_source": sorted(os.path.basename(t) for t in glob.glob(os.path.join(PEERS, "llama_cpp_python-*.tar.gz"))),
                "sha256": {os.path.basename(p): sha256_file(p) for p in sorted(glob.glob(os.path.join(OUT, "*")))
                           if not p.endswith("versions.json")}}
    with open(os.path.join(OUT, "versions.json"), "w") as f:
        json.dump(versions, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
