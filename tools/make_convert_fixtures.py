#!/usr/bin/env python3
"""Reference outputs of llama.cpp's own converter for `spore convert`'s tests
(tests/nlp/convert_test.cc), written to tests/fixtures/convert/.

For three tiny models (llama with Llama 3 RoPE scaling and an untied lm_head; qwen2 with q/k/v
biases, tied embeddings and sharded safetensors; qwen3 with explicit head_dim, q/k norms and
bfloat16 weights) it writes the Hugging Face directory's small files (config.json,
generation_config.json, tokenizer.json, tokenizer_config.json, and the shard index) under
tests/fixtures/convert/<arch>/, generates the weights from a formula the C++ test recomputes
(splitmix64 of the tensor's index and element index; see weight_values), runs llama.cpp's
convert_hf_to_gguf.py on the directory for --outtype f32, f16, bf16 and q8_0, and records what
it wrote in tests/fixtures/convert/reference.json: every metadata key and value (minus
general.* bookkeeping), and every tensor's name, type, dims and the SHA-256 of its bytes. The
weights themselves are not committed.

The tokenizer is a small byte-level BPE trained here (HF `tokenizers`, deterministic) with
Qwen2's pre-tokenizer. llama.cpp names a pre-tokenizer by hashing the tokenizer's output on a
probe text, which only works for published tokenizers, so this script tells the converter the
name ("qwen2") for this one; everything else is the converter's own code.

Rerun (the llama.cpp sources come with llama-cpp-python's source distribution):
  /work/main/.venv-peers/bin/pip download --no-binary :all: --no-deps llama-cpp-python==0.3.36 -d /tmp/lcp
  tar xzf /tmp/lcp/llama_cpp_python-0.3.36.tar.gz -C /tmp/lcp
  /work/main/.venv-peers/bin/python tools/make_convert_fixtures.py \
      --llama-cpp /tmp/lcp/llama_cpp_python-0.3.36/vendor/llama.cpp
"""
import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures", "convert"))
VOCAB = 320  # the tokenizer has fewer: the rest become [PAD<id>] / unused, as in real models

MASK = (1 << 64) - 1


def splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)) & np.uint64(MASK)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def weight_values(index: int, n: int, bits: int) -> np.ndarray:
    """Element i of tensor `index`: the top `bits` bits of splitmix64(index << 32 | i), centred and
    scaled to [-0.5, 0.5); exact in float32 (bits = 16) or in bfloat16 too (bits = 8)."""
    i = np.arange(n, dtype=np.uint64) | (np.uint64(index) << np.uint64(32))
    top = (splitmix64(i) >> np.uint64(64 - bits)).astype(np.float64)
    return ((top - 2 ** (bits - 1)) / 2 ** bits).astype(np.float32)


CORPUS = [
    "Hello world! The quick brown fox jumps over the lazy dog. 12345 67890",
    "Spore converts Hugging Face models to GGUF files, quantising on the way.",
    "你好，世界。今天天气很好。 Emoji: 😀🚀 and accents: café naïve",
    "def main():\n    return 42\n\n\tTabs and  double  spaces.\r\n",
] * 20


def make_tokenizer(dirpath: str) -> None:
    from tokenizers import Tokenizer, Regex, models, normalizers, pre_tokenizers, decoders, trainers
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
                             behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    from tokenizers import processors
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    tok.save(os.path.join(dirpath, "tokenizer.json"))
    template = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + "
                "'<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")
    with open(os.path.join(dirpath, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "add_prefix_space": False, "bos_token": None,
                   "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>", "unk_token": None,
                   "model_max_length": 512, "chat_template": template}, f, indent=2)


ARCHS = {
    "llama": dict(
        config={"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
                "intermediate_size": 160, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 512, "rms_norm_eps": 1e-5,
                "rope_theta": 500000.0, "tie_word_embeddings": False, "vocab_size": VOCAB,
                "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
                "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 64}},
        bias=False, qk_norm=False, tied=False, bits=16, dtype="float32", shards=1),
    "qwen2": dict(
        config={"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 64,
                "intermediate_size": 96, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
                "rope_theta": 1000000.0, "tie_word_embeddings": True, "vocab_size": VOCAB,
                "bos_token_id": 0, "eos_token_id": 2, "torch_dtype": "float32"},
        bias=True, qk_norm=False, tied=True, bits=16, dtype="float32", shards=2),
    "qwen3": dict(
        config={"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 256,
                "intermediate_size": 256, "num_hidden_layers": 1, "num_attention_heads": 4,
                "num_key_value_heads": 2, "head_dim": 32, "max_position_embeddings": 1024,
                "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": True,
                "vocab_size": VOCAB, "bos_token_id": 0, "eos_token_id": 2, "torch_dtype": "bfloat16"},
        bias=False, qk_norm=True, tied=True, bits=8, dtype="bfloat16", shards=1),
}


def hf_tensors(spec: dict) -> list[tuple[str, list[int]]]:
    c = spec["config"]
    h, ff, nh, nkv = c["hidden_size"], c["intermediate_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd = c.get("head_dim", h // nh)
    out = [("model.embed_tokens.weight", [VOCAB, h]), ("model.norm.weight", [h])]
    if not spec["tied"]:
        out.append(("lm_head.weight", [VOCAB, h]))
    for b in range(c["num_hidden_layers"]):
        p = f"model.layers.{b}."
        out += [(p + "input_layernorm.weight", [h]), (p + "post_attention_layernorm.weight", [h]),
                (p + "self_attn.q_proj.weight", [nh * hd, h]), (p + "self_attn.k_proj.weight", [nkv * hd, h]),
                (p + "self_attn.v_proj.weight", [nkv * hd, h]), (p + "self_attn.o_proj.weight", [h, nh * hd]),
                (p + "mlp.gate_proj.weight", [ff, h]), (p + "mlp.up_proj.weight", [ff, h]),
                (p + "mlp.down_proj.weight", [h, ff])]
        if spec["bias"]:
            out += [(p + "self_attn.q_proj.bias", [nh * hd]), (p + "self_attn.k_proj.bias", [nkv * hd]),
                    (p + "self_attn.v_proj.bias", [nkv * hd])]
        if spec["qk_norm"]:
            out += [(p + "self_attn.q_norm.weight", [hd]), (p + "self_attn.k_norm.weight", [hd])]
    return sorted(out)


def write_model(arch: str, spec: dict, model_dir: str, fixture_dir: str) -> list[dict]:
    import torch
    from safetensors.torch import save_file
    for d in (model_dir, fixture_dir):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(spec["config"], f, indent=2)
        with open(os.path.join(d, "generation_config.json"), "w") as f:
            json.dump({"bos_token_id": spec["config"]["bos_token_id"], "eos_token_id": [2, 0], "do_sample": False}, f, indent=2)
    make_tokenizer(fixture_dir)
    for n in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(fixture_dir, n), os.path.join(model_dir, n))
    listed = []
    shards: list[dict] = [{} for _ in range(spec["shards"])]
    for k, (name, shape) in enumerate(hf_tensors(spec)):
        v = weight_values(k, int(np.prod(shape)), spec["bits"]).reshape(shape)
        t = torch.from_numpy(v)
        if spec["dtype"] == "bfloat16":
            t = t.to(torch.bfloat16)
        shard = k % spec["shards"]
        shards[shard][name] = t
        fname = "model.safetensors" if spec["shards"] == 1 else f"model-{shard + 1:05d}-of-{spec['shards']:05d}.safetensors"
        listed.append({"name": name, "shape": shape, "index": k, "bits": spec["bits"], "dtype": spec["dtype"], "file": fname})
    if spec["shards"] == 1:
        save_file(shards[0], os.path.join(model_dir, "model.safetensors"))
    else:
        weight_map = {}
        for s, tensors in enumerate(shards):
            fname = f"model-{s + 1:05d}-of-{spec['shards']:05d}.safetensors"
            save_file(tensors, os.path.join(model_dir, fname))
            weight_map.update({n: fname for n in tensors})
        index = {"metadata": {"total_size": 0}, "weight_map": dict(sorted(weight_map.items()))}
        for d in (model_dir, fixture_dir):
            with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
                json.dump(index, f, indent=2)
    return listed


def jsonable(v):
    if isinstance(v, (bytes, bytearray)):
        return v.decode("utf-8")
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, list):
        return [jsonable(x) for x in v]
    return v


def summarize(path: str, f32_path: str | None = None) -> dict:
    """Metadata and tensors of a GGUF file. For quantized tensors also "max_error": the largest
    |dequantised - float32| against the same tensor of the f32 conversion (`f32_path`), which the
    test holds Spore's own quantisation to (its bytes may round a few values the other way)."""
    import gguf
    from gguf.quants import dequantize
    r = gguf.GGUFReader(path)
    f32 = {t.name: t for t in gguf.GGUFReader(f32_path).tensors} if f32_path else {}
    meta = {}
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key in ("general.name", "general.size_label", "general.basename",
                                               "general.finetune", "general.version"):
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1] if len(field.types) > 1 else None
            vals = [jsonable(field.parts[i].tobytes() if sub == gguf.GGUFValueType.STRING else field.parts[i].tolist()[0])
                    for i in field.data]
            meta[key] = {"type": "array", "element": sub.name.lower() if sub else None, "value": vals}
        elif vtype == gguf.GGUFValueType.STRING:
            meta[key] = {"type": "string", "value": field.parts[field.data[0]].tobytes().decode("utf-8")}
        else:
            meta[key] = {"type": vtype.name.lower(), "value": jsonable(field.parts[field.data[0]].tolist()[0])}
    tensors = []
    for t in r.tensors:
        entry = {"name": t.name, "type": t.tensor_type.name, "dims": [int(d) for d in t.shape],
                 "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()}
        if t.tensor_type.name not in ("F32", "F16", "BF16") and t.name in f32:
            deq = dequantize(t.data, t.tensor_type).reshape(-1).astype(np.float64)
            src = np.asarray(f32[t.name].data, dtype=np.float64).reshape(-1)
            entry["max_error"] = float(np.max(np.abs(deq - src)))
        tensors.append(entry)
    return {"metadata": meta, "tensors": tensors}


def gguf_py_dequant(spore: str, model_dir: str, work: str) -> dict:
    """llama.cpp's dequantisers (gguf-py) on the blocks `spore convert` writes: for each 4-bit
    tensor of the qwen3 model, the SHA-256 of Spore's bytes and of gguf-py's float32 values, so the
    test can check that Spore's dequantize_row reads those bytes as llama.cpp does. (When Spore's
    quantisers change, the bytes change: rerun this script.)"""
    import subprocess
    import gguf
    from gguf.quants import dequantize
    out = {}
    for outtype in ("q4_0", "q4_1", "q4_k"):
        path = os.path.join(work, f"qwen3-spore-{outtype}.gguf")
        subprocess.run([spore, "convert", model_dir, path, "--type", outtype, "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        tensors = {}
        for t in gguf.GGUFReader(path).tensors:
            if t.tensor_type.name in ("Q4_0", "Q4_1", "Q4_K"):
                deq = dequantize(t.data, t.tensor_type).astype(np.float32)
                tensors[t.name] = {"type": t.tensor_type.name, "bytes_sha256": hashlib.sha256(t.data.tobytes()).hexdigest(),
                                   "dequant_sha256": hashlib.sha256(deq.tobytes()).hexdigest()}
        out[outtype] = tensors
    return out


def quantizer_reference() -> dict:
    """llama.cpp's reference quantisers (gguf-py's numpy ports of quantize_row_*_ref) on 256
    blocks of weight_values(1000, ..., 16): the largest and the mean |dequantised - x|, which the
    test holds Spore's quantisers to."""
    from gguf import GGMLQuantizationType as Q
    from gguf.quants import quantize, dequantize
    x = weight_values(1000, 32 * 256, 16).reshape(8, 1024)
    out = {}
    for name, q in (("q8_0", Q.Q8_0), ("q4_0", Q.Q4_0), ("q4_1", Q.Q4_1)):
        err = np.abs(dequantize(quantize(x, q), q).astype(np.float64) - x.astype(np.float64))
        out[name] = {"index": 1000, "bits": 16, "rows": 8, "cols": 1024,
                     "max_error": float(err.max()), "mean_error": float(err.mean())}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llama-cpp", required=True, help="llama.cpp source tree (vendor/llama.cpp of llama-cpp-python)")
    ap.add_argument("--spore", default=os.path.join(HERE, "..", "build", "release", "bin", "spore"),
                    help="the spore program whose q4_0/q4_1/q4_k output gguf-py dequantises")
    args = ap.parse_args()
    sys.path.insert(0, args.llama_cpp)
    sys.path.insert(1, os.path.join(args.llama_cpp, "gguf-py"))
    import convert_hf_to_gguf
    from conversion import base
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"  # see the docstring
    # Without the sentencepiece module the converter fails before it looks for tokenizer.model;
    # with it, a directory without tokenizer.model raises FileNotFoundError, as here.
    original_sp = base.TextModel._create_vocab_sentencepiece

    def sentencepiece_vocab(self):
        if not (self.dir_model / "tokenizer.model").is_file():
            raise FileNotFoundError(f"File not found: {self.dir_model / 'tokenizer.model'}")
        return original_sp(self)
    base.TextModel._create_vocab_sentencepiece = sentencepiece_vocab

    reference = {"vocab_size": VOCAB, "models": {}, "quantizers": quantizer_reference()}
    work = tempfile.mkdtemp(prefix="spore_convert_ref_")
    try:
        for arch, spec in ARCHS.items():
            model_dir = os.path.join(work, arch)
            listed = write_model(arch, spec, model_dir, os.path.join(OUT, arch))
            outputs = {}
            for outtype in ("f32", "f16", "bf16", "q8_0"):
                out = os.path.join(work, f"{arch}-{outtype}.gguf")
                sys.argv = ["convert_hf_to_gguf.py", model_dir, "--outfile", out, "--outtype", outtype]
                convert_hf_to_gguf.main()
                outputs[outtype] = summarize(out, os.path.join(work, f"{arch}-f32.gguf"))
            reference["models"][arch] = {"hf_tensors": listed, "outputs": outputs}
            if arch == "qwen3":
                reference["gguf_py_dequant"] = gguf_py_dequant(args.spore, model_dir, work)
            print(f"{arch}: {len(listed)} tensors, {len(outputs)} reference files")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with open(os.path.join(OUT, "reference.json"), "w") as f:
        json.dump(reference, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"wrote {os.path.join(OUT, 'reference.json')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
