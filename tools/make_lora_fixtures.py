"""LoRA adapter fixtures (NOTE [LoRA adapters] in docs/design.md): random PEFT adapters over the
tiny llama fixture (tests/fixtures/llm/llama/hf, float32), saved by PEFT itself, one converted to
GGUF by llama.cpp's own convert_lora_to_gguf.py, and PEFT's merged-model logits (merge_and_unload)
as the references the tests compare Spore's unmerged application with.

    /work/main/.venv-peers/bin/python tools/make_lora_fixtures.py

Writes tests/fixtures/lora/:
  a/               PEFT adapter dir (adapter_config.json, adapter_model.safetensors): rank 4,
                   alpha 8, every projection of both layers (q k v o gate up down)
  a.gguf           a converted by llama.cpp's convert_lora_to_gguf.py (f32)
  a-q8_0.gguf      the same with --outtype q8_0 (its A and B in Q8_0 blocks)
  b/               PEFT adapter dir: rank 2, alpha 3, use_rslora (scale alpha / sqrt(r)), q k up
                   only, layer 1 only (layers_to_transform)
  reference.safetensors  logits_base, logits_a, logits_a_half (scale 0.5), logits_b, logits_a_q8_0
                   (a-q8_0.gguf's A and B as gguf-py dequantizes them): float32 [len(IDS), vocab],
                   every position, from transformers on PEFT's merged weights
  reference.json   the token ids and versions
and the lora_adapter fuzz target's seeds (tests/fuzz/corpus/lora_adapter/).

Needs the peers environment (scripts/install-py-peers.sh nlp torch llm: transformers, torch, peft,
safetensors, gguf) and llama.cpp's sources
from the pinned llama-cpp-python sdist (tools/llama_cpp_sdist.py)."""
import json
import pathlib
import subprocess
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from llama_convert import LLAMA_CPP_PYTHON, PEERS  # noqa: E402
from llama_cpp_sdist import llama_cpp_source  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASE = ROOT / "tests" / "fixtures" / "llm" / "llama" / "hf"
OUT = ROOT / "tests" / "fixtures" / "lora"
IDS = [1, 17, 42, 99, 3, 250, 7, 64]


def base_model():
    from transformers import AutoModelForCausalLM
    m = AutoModelForCausalLM.from_pretrained(str(BASE), torch_dtype=torch.float32, attn_implementation="eager")
    return m.eval()


def logits(model):
    with torch.no_grad():
        return model(torch.tensor([IDS])).logits[0].contiguous()


def randomize(model, seed):
    """Both A and B random (PEFT starts B at zero, which would make the adapter a no-op)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_A" in name or "lora_B" in name:
                p.copy_(0.4 * torch.randn(p.shape, generator=g) / p.shape[-1] ** 0.5)


def make_adapter(name, seed, **config):
    from peft import LoraConfig, get_peft_model
    peft = get_peft_model(base_model(), LoraConfig(lora_dropout=0.0, bias="none", task_type="CAUSAL_LM", **config))
    randomize(peft, seed)
    peft.save_pretrained(str(OUT / name))
    # The committed files name no checkout: the base is the fixture beside them.
    cfg_path = OUT / name / "adapter_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["base_model_name_or_path"] = "tests/fixtures/llm/llama/hf"
    cfg["target_modules"] = sorted(cfg["target_modules"])  # PEFT saves a set: its order varies by run
    cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    (OUT / name / "README.md").unlink(missing_ok=True)  # PEFT's model-card template
    return peft


def merged_logits(peft, scale=None):
    if scale is not None:
        for module in peft.modules():
            if hasattr(module, "set_scale") and hasattr(module, "lora_A"):
                module.set_scale("default", scale)
    return logits(peft.merge_and_unload().eval())


def convert_to_gguf(name, outtype="f32"):
    src = llama_cpp_source(str(PEERS), [sys.executable, "-m", "pip"], LLAMA_CPP_PYTHON)
    sys_path = [str(pathlib.Path(src) / "gguf-py")]
    env = dict(**__import__("os").environ, PYTHONPATH=":".join(sys_path))
    out = OUT / (f"{name}.gguf" if outtype == "f32" else f"{name}-{outtype}.gguf")
    subprocess.run([sys.executable, str(pathlib.Path(src) / "convert_lora_to_gguf.py"), "--base", str(BASE),
                    "--outtype", outtype, "--outfile", str(out), str(OUT / name)],
                   check=True, env=env)


# GGUF projection name -> the PEFT module under model.layers.N (this tool's own reading, for the
# reference; Spore maps names through the family's table).
GGUF_MODULES = {"attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
                "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
                "ffn_down": "mlp.down_proj"}


def load_gguf_adapter(peft, path):
    """The A / B of a GGUF adapter, dequantized by gguf-py (llama.cpp's own Python package) and put
    into `peft`'s lora_A / lora_B, with the converter's q/k row permutation of B undone: the
    reference for a quantized adapter file."""
    from gguf import GGUFReader
    from gguf.quants import dequantize
    cfg = peft.base_model.model.config
    heads = {"attn_q": cfg.num_attention_heads, "attn_k": cfg.num_key_value_heads}
    params = dict(peft.named_parameters())
    for t in GGUFReader(str(path)).tensors:
        blk, layer, proj, _, half = t.name.split(".")
        rows, cols = int(t.shape[1]), int(t.shape[0])
        w = torch.from_numpy(dequantize(t.data, t.tensor_type).astype("float32").reshape(rows, cols))
        if half == "lora_b" and proj in heads:  # inverse of LlamaModel.permute
            n = heads[proj]
            w = w.reshape(n, rows // n // 2, 2, cols).swapaxes(1, 2).reshape(rows, cols)
        key = (f"base_model.model.model.layers.{layer}.{GGUF_MODULES[proj]}."
               f"{'lora_A' if half == 'lora_a' else 'lora_B'}.default.weight")
        with torch.no_grad():
            params[key].copy_(w)


def check_llama_cpp(refs):
    """llama.cpp itself (llama-cpp-python, the pinned sources, float32 KV cache) running each GGUF
    adapter on the converter's GGUF base agrees with PEFT's merged model and is far from the base:
    the file means to llama.cpp what the references say. Within 1e-3 for the f32 file (measured:
    below 1e-5); 5e-2 for q8_0, where ggml also rounds the activations of its Q8_0 A products to
    q8_0 blocks (measured 0.031, against 2.4 from the base), which Spore, multiplying by the
    dequantized A in float32, does not."""
    import llama_cpp
    import numpy as np
    base = ROOT / "tests" / "fixtures" / "llm" / "llama" / "model-llama-cpp.gguf"
    for name, key, tol in (("a.gguf", "logits_a", 1e-3), ("a-q8_0.gguf", "logits_a_q8_0", 5e-2)):
        llm = llama_cpp.Llama(model_path=str(base), lora_path=str(OUT / name), n_ctx=64, logits_all=True,
                              verbose=False, n_threads=1, type_k=0, type_v=0)
        llm.eval(IDS)
        got = torch.tensor(np.array(llm.scores[:len(IDS)]), dtype=torch.float32)
        d, far = (got - refs[key]).abs().max().item(), (got - refs["logits_base"]).abs().max().item()
        print(f"llama.cpp with {name}: max |llama.cpp - {key}| = {d:.5f} (from the base: {far:.3f})")
        assert d < tol and far > 40 * d, (name, d, far)


def write_fuzz_seeds():
    """Seeds of the lora_adapter fuzz target (tests/fuzz/lora_adapter_fuzz.cc): the GGUF adapter as
    it is; a PEFT adapter as a 4-byte little-endian length, adapter_config.json, then
    adapter_model.safetensors; a config alone."""
    corpus = ROOT / "tests" / "fuzz" / "corpus" / "lora_adapter"
    corpus.mkdir(parents=True, exist_ok=True)
    (corpus / "gguf_a").write_bytes((OUT / "a.gguf").read_bytes())
    config = (OUT / "b" / "adapter_config.json").read_bytes()
    weights = (OUT / "b" / "adapter_model.safetensors").read_bytes()
    (corpus / "peft_b").write_bytes(len(config).to_bytes(4, "little") + config + weights)
    small = json.dumps({"peft_type": "LORA", "r": 2, "lora_alpha": 4, "target_modules": ["q_proj"],
                        "alpha_pattern": {"q_proj": 2}}).encode()
    (corpus / "config_only").write_bytes(len(small).to_bytes(4, "little") + small)


def main():
    import peft
    import transformers
    OUT.mkdir(parents=True, exist_ok=True)
    all_modules = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    refs = {"logits_base": logits(base_model())}
    a = make_adapter("a", 7, r=4, lora_alpha=8, target_modules=all_modules)
    refs["logits_a"] = merged_logits(a)
    a_half = make_adapter("a", 7, r=4, lora_alpha=8, target_modules=all_modules)  # same seed: same weights
    refs["logits_a_half"] = merged_logits(a_half, 0.5)
    b = make_adapter("b", 11, r=2, lora_alpha=3, use_rslora=True, target_modules=["q_proj", "k_proj", "up_proj"],
                     layers_to_transform=[1])
    refs["logits_b"] = merged_logits(b)
    for k in ("logits_a", "logits_a_half", "logits_b"):
        d = (refs[k] - refs["logits_base"]).abs().max().item()
        assert d > 0.05, f"{k}: the adapter barely moves the logits ({d})"
        print(k, "max |merged - base| = %.4f" % d)
    convert_to_gguf("a")
    convert_to_gguf("a", "q8_0")
    a_q8 = make_adapter("a", 7, r=4, lora_alpha=8, target_modules=all_modules)
    load_gguf_adapter(a_q8, OUT / "a-q8_0.gguf")
    refs["logits_a_q8_0"] = merged_logits(a_q8)
    print("logits_a_q8_0 max |q8_0 - f32| = %.4f" % (refs["logits_a_q8_0"] - refs["logits_a"]).abs().max().item())
    check_llama_cpp(refs)
    save_file(refs, str(OUT / "reference.safetensors"))
    (OUT / "reference.json").write_text(json.dumps(
        {"ids": IDS, "transformers": transformers.__version__, "peft": peft.__version__, "torch": torch.__version__,
         "llama_cpp_python": LLAMA_CPP_PYTHON}, indent=1) + "\n")
    write_fuzz_seeds()
    for f in sorted(OUT.rglob("*")):
        if f.is_file():
            print(f.relative_to(OUT), f.stat().st_size)


if __name__ == "__main__":
    main()
