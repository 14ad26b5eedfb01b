"""Shared by the spore.nlp tests: the fixtures' paths, a tiny random chat Llama with a real
tokenizer and template (the tiny fixtures of tests/fixtures/llm carry none, and `spore generate`
needs one), the C++ CLI, and a safetensors reader independent of Spore's."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LLAMA_HF = ROOT / "tests/fixtures/llm/llama/hf"
LLAMA_GGUF = ROOT / "tests/fixtures/llm/llama/model.gguf"
PEFT_REFERENCE = ROOT / "tests/fixtures/finetune/peft_reference.safetensors"
CHAT_FILES = ROOT / "tests/fixtures/convert/llama"  # config, byte-level BPE tokenizer, ChatML template
CLI = os.environ.get("SPORE_CLI", str(ROOT / "build/release/bin/spore"))

_DTYPES = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    """{name: array} by the format's definition (8-byte header length, JSON header, raw data)."""
    data = Path(path).read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


def make_tiny_chat_llama(directory, seed=3):
    """config.json / tokenizer.json / tokenizer_config.json / generation_config.json of
    tests/fixtures/convert/llama (hidden 64, 4 heads of 16, 2 kv heads, ffn 160, 2 layers;
    vocab 300) and random float32 weights, written with spore.save_checkpoint."""
    import spore
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        shutil.copy(CHAT_FILES / f, directory / f)
    # The tokenizer has 300 tokens: a vocabulary of exactly those, so no sampled id lacks a text.
    config = json.loads((CHAT_FILES / "config.json").read_text())
    config["vocab_size"] = 300
    (directory / "config.json").write_text(json.dumps(config))
    rng = np.random.default_rng(seed)
    h, f_, v, kv = 64, 160, 300, 32
    w = {"model.embed_tokens.weight": (v, h), "lm_head.weight": (v, h)}
    for layer in range(2):
        p = f"model.layers.{layer}."
        w.update({p + "self_attn.q_proj.weight": (h, h), p + "self_attn.k_proj.weight": (kv, h),
                  p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, h),
                  p + "mlp.gate_proj.weight": (f_, h), p + "mlp.up_proj.weight": (f_, h),
                  p + "mlp.down_proj.weight": (h, f_)})
    tensors = {k: spore.Tensor((rng.normal(size=s) * 0.08).astype(np.float32)) for k, s in w.items()}
    tensors["model.norm.weight"] = spore.Tensor(np.ones(h, np.float32))
    for layer in range(2):
        for n in ("input_layernorm", "post_attention_layernorm"):
            tensors[f"model.layers.{layer}.{n}.weight"] = spore.Tensor(np.ones(h, np.float32))
    spore.save_checkpoint(tensors, str(directory / "model.safetensors"))
    return directory


def cli_generate(model, prompt_ids, max_tokens, lora=None):
    """`spore generate --print-ids` greedy: its JSON line (prompt_ids, ids without a final EOS, text, finish)."""
    args = [CLI, "generate", "--model", str(model), "--prompt-ids", ",".join(map(str, prompt_ids)),
            "--max-tokens", str(max_tokens), "--temperature", "0", "--print-ids"]
    if lora is not None:
        args += ["--lora", str(lora)]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])
