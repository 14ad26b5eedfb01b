#!/usr/bin/env python3
"""Writes tests/fixtures/finetune/peft_reference.safetensors: PyTorch + PEFT references for LoRA
training of the tiny random Llama of tests/fixtures/llm/llama/hf (NOTE [LoRA training]).

Run with the peers' Python: /work/main/.venv-peers/bin/python tools/make_finetune_fixtures.py

transformers (float32, eager attention) wraps the fixture with PEFT's LoRA (rank 4, alpha 8,
dropout 0, on all seven projections); A and B are set to seeded uniform values (B non-zero, so
that A's gradient is not zero at the first step) and saved as `init.<PEFT name>`. On two
sequences with loss masks (the loss is the mean negative log-likelihood over the target tokens
of both, as `spore finetune` defines a step's loss) it records:
  * `step0.loss` and `grad.<PEFT name>`: the loss and every adapter gradient before any update;
  * `losses`: the loss at each of 50 AdamW steps (lr 1e-2, weight decay 0.01, betas 0.9/0.999,
    eps 1e-8, no clipping) under Spore's schedule: linear warm-up over 1 step (lr (s+1)/W), then
    cosine from lr to 0 over the remaining 49;
  * `trained.<PEFT name>`: the adapter after those steps.
For every other dense family the training forward runs (qwen2, qwen3, mistral, gemma, gemma2,
gemma3, granite, olmo2: biases, q/k norms, sliding windows, soft-caps, sandwich norms, embedding
and residual scales), tests/fixtures/finetune/peft_step0_<family>.safetensors holds the loss and
every adapter gradient on the same two sequences for the family's tiny fixture, with A and B set
by a formula both sides compute (formula_init), so only the references are stored.
With --check-spore BIN (the built spore CLI) it instead checks what `spore finetune` writes, not
references: on a tiny random Llama made here with transformers (the config and ChatML tokenizer
of tests/fixtures/convert/llama), it runs `spore finetune` on a small chat data set, loads the PEFT
adapter with peft.PeftModel.from_pretrained (every tensor read with Spore's values), converts the
base with `spore convert --type f32` and loads it in llama.cpp (llama-cpp-python, the pinned
0.3.36 sources) with Spore's GGUF adapter, and compares the two adapted models' logits: they must
agree within 1e-3 and differ from the base's.
"""
import argparse
import math
import pathlib
import sys

import numpy as np
import torch
from peft import LoraConfig, PeftModel, get_peft_model
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = pathlib.Path(__file__).resolve().parent.parent
BASE = ROOT / "tests/fixtures/llm/llama/hf"
OUT = ROOT / "tests/fixtures/finetune"
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
RANK, ALPHA = 4, 8.0
LR, WD, STEPS, WARMUP = 1e-2, 0.01, 50, 1

# Two sequences (ids < 256, the fixture's vocabulary) and their target flags: flag i says token i
# is predicted (from position i - 1) and counted in the loss.
SEQS = [
    ([1, 17, 42, 99, 3, 250, 7, 8, 9], [0, 0, 0, 0, 0, 1, 1, 1, 1]),
    ([1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15], [0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 1]),
]


FAMILIES = ["qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3", "granite", "olmo2"]


def base_model(path=BASE):
    return AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, attn_implementation="eager").eval()


def formula_init(name, shape):
    """A deterministic adapter value both sides compute: 0.3 sin(0.37 i + 1.1 layer + k) for A,
    0.1 cos(0.53 i + 0.7 layer + k) for B, i the flat index, k the target's index (TARGETS)."""
    layer = int(name.split(".layers.")[1].split(".")[0])
    k = next(j for j, t in enumerate(TARGETS) if "." + t + "." in name)
    i = np.arange(int(np.prod(shape)), dtype=np.float64)
    if "lora_A" in name:
        v = 0.3 * np.sin(0.37 * i + 1.1 * layer + k)
    else:
        v = 0.1 * np.cos(0.53 * i + 0.7 * layer + k)
    return torch.from_numpy(v.reshape(shape).astype(np.float32))


def make_family_references(family):
    model = get_peft_model(base_model(ROOT / "tests/fixtures/llm" / family / "hf"),
                           LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0, target_modules=TARGETS,
                                      task_type="CAUSAL_LM"))
    params = lora_params(model)
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(formula_init(name, tuple(p.shape)))
    loss = loss_of(model)
    loss.backward()
    out = {"step0.loss": loss.detach().reshape(1)}
    for name, p in sorted(params.items()):
        out["grad." + name] = p.grad.detach().clone()
    save_file({k: v.contiguous() for k, v in out.items()}, str(OUT / f"peft_step0_{family}.safetensors"))
    print(family, "loss", loss.item(), len(params), "adapters")


def loss_of(model):
    nll, count = 0.0, 0
    for ids, flags in SEQS:
        logits = model(input_ids=torch.tensor([ids])).logits[0]
        logp = torch.log_softmax(logits[:-1].float(), dim=-1)
        for i in range(1, len(ids)):
            if flags[i]:
                nll = nll - logp[i - 1, ids[i]]
                count += 1
    return nll / count


def lr_at(step):
    """Spore's optim::linear_warmup(WARMUP, cosine_lr(LR, STEPS - WARMUP)) as a factor of LR."""
    if step < WARMUP:
        return (step + 1) / WARMUP
    t = step - WARMUP
    total = STEPS - WARMUP
    return 0.5 * (1 + math.cos(math.pi * t / total)) if t < total else 0.0


def lora_params(model):
    return {n.replace(".default", ""): p for n, p in model.named_parameters() if "lora_" in n}


def make_references():
    torch.manual_seed(0)
    model = get_peft_model(base_model(), LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=0.0,
                                                    target_modules=TARGETS, task_type="CAUSAL_LM"))
    rng = np.random.default_rng(30)
    out = {}
    with torch.no_grad():
        for name, p in sorted(lora_params(model).items()):
            bound = 0.3 if "lora_A" in name else 0.1
            p.copy_(torch.from_numpy(rng.uniform(-bound, bound, size=tuple(p.shape)).astype(np.float32)))
            out["init." + name] = p.detach().clone()
    params = lora_params(model)
    loss = loss_of(model)
    loss.backward()
    out["step0.loss"] = loss.detach().reshape(1)
    for name, p in sorted(params.items()):
        out["grad." + name] = p.grad.detach().clone()
    model.zero_grad()
    opt = torch.optim.AdamW(list(params.values()), lr=LR, betas=(0.9, 0.999), eps=1e-8, weight_decay=WD)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = loss_of(model)
        loss.backward()
        losses.append(loss.item())
        opt.step()
        sched.step()
    out["losses"] = torch.tensor(losses, dtype=torch.float64)
    for name, p in sorted(params.items()):
        out["trained." + name] = p.detach().clone()
    OUT.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in out.items()}, str(OUT / "peft_reference.safetensors"))
    print("losses", losses)


def check_spore(spore_bin):
    import json
    import shutil
    import subprocess
    import tempfile

    from transformers import LlamaConfig, LlamaForCausalLM

    tok_dir = ROOT / "tests/fixtures/convert/llama"
    work = pathlib.Path(tempfile.mkdtemp(prefix="spore_finetune_check."))
    try:
        torch.manual_seed(1)
        cfg = LlamaConfig(**{k: v for k, v in json.loads((tok_dir / "config.json").read_text()).items()
                             if k not in ("architectures", "torch_dtype")})
        LlamaForCausalLM(cfg).save_pretrained(work / "model")
        for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            shutil.copy(tok_dir / f, work / "model" / f)
        rows = [{"messages": [{"role": "user", "content": f"item {i}"},
                              {"role": "assistant", "content": "{\"ok\": true}"}]} for i in range(8)]
        (work / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        run = [spore_bin, "finetune", "--model", str(work / "model"), "--data", str(work / "data.jsonl"),
               "--out", str(work / "run"), "--lora-rank", "4", "--epochs", "2", "--lr", "1e-2",
               "--lora-dropout", "0", "--batch-tokens", "64"]
        subprocess.run(run, check=True)
        subprocess.run([spore_bin, "convert", str(work / "model"), str(work / "base.gguf"), "--type", "f32"], check=True)
        ids = [1, 17, 42, 99, 3, 250, 7, 8, 9]
        base = AutoModelForCausalLM.from_pretrained(work / "model", dtype=torch.float32,
                                                    attn_implementation="eager").eval()
        with torch.no_grad():
            base_logits = base(input_ids=torch.tensor([ids])).logits[0].clone()
        peft_model = PeftModel.from_pretrained(base, work / "run").eval()
        written = load_file(str(work / "run/adapter_model.safetensors"))
        loaded = lora_params(peft_model)
        assert set(written) == set(loaded), f"PEFT's names differ: {sorted(set(written) ^ set(loaded))[:6]}"
        for name, t in written.items():
            assert torch.equal(loaded[name].detach(), t), name
        with torch.no_grad():
            peft_logits = peft_model(input_ids=torch.tensor([ids])).logits[0].numpy()
        moved = float(np.abs(peft_logits - base_logits.numpy()).max())
        assert moved > 1e-3, f"the adapter changes the logits by {moved} only"
        from llama_cpp import Llama

        llm = Llama(model_path=str(work / "base.gguf"), lora_path=str(work / "run/adapter.gguf"), n_ctx=64,
                    logits_all=True, verbose=False)
        llm.eval(ids)
        cpp_logits = np.array(llm.scores[: len(ids)])
        diff = float(np.abs(cpp_logits - peft_logits).max())
        print(f"PEFT read {len(written)} tensors; the adapter moves the logits by up to {moved:.4g}; "
              f"llama.cpp with adapter.gguf vs PEFT: max |diff| {diff:.3g}")
        assert diff < 1e-3, "llama.cpp's adapted logits differ from PEFT's"
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--check-spore", help="the spore CLI: check what `spore finetune` writes with PEFT and llama.cpp")
    args = ap.parse_args()
    if args.check_spore:
        check_spore(args.check_spore)
    else:
        make_references()
        for family in FAMILIES:
            make_family_references(family)
    sys.exit(0)
