#!/usr/bin/env python3
"""Training tokens/s and peak memory of `spore finetune` against PyTorch + PEFT on the CPU
(issue 30 item 5, NOTE [LoRA training] in docs/design.md).

usage: /work/main/.venv-peers/bin/python bench/finetune_bench.py [--spore build/release/bin/spore]
           [--models smollm2,random] [--rounds 5] [--steps 8] [--batch 4] [--seq-len 128]
           [--threads 2] [--work outputs/finetune-bench]

Both sides train the same model on the same data with the same plan:
  * models: SmolLM2-135M-Instruct (the embedded Q4_1 GGUF, models/smollm2-135m-instruct, read by
    transformers' GGUF loader and saved as a float32 Hugging Face directory that both sides load,
    so neither trains over a quantised base) and a smaller random Llama (4 layers, hidden 256,
    SmolLM2's tokenizer and vocabulary), made here with a fixed seed;
  * data: prompt/completion records whose text is drawn from single-token words so that every
    record has the same token count (no padding on PyTorch's side, one packed micro-batch on
    Spore's); loss on the completion and the end-of-sequence token, the mean over the target
    tokens of the step;
  * LoRA rank 8, alpha 16, dropout 0.05 on all seven projections; AdamW lr 2e-4, gradient
    clipping at 1.0; `--batch` sequences per optimizer step, `--steps` steps, float32;
  * threads: `spore finetune --threads T` and torch.set_num_threads(T) (OMP_NUM_THREADS too).
Each side runs as its own process, its peak RSS read with wait4. Timing excludes the model load
and the first step (a warm-up on both sides: kernel JIT, allocator growth): steps 2..N's tokens
over their time. PyTorch times them itself; Spore's come from its progress lines (the cumulative
tokens and seconds printed after the first and the last step). Rounds interleave
the sides; the table shows medians. Above 1 in `ratio` means Spore is faster. `--bf16`: both in
bfloat16 mixed precision (`spore finetune --bf16`; torch.autocast("cpu", bfloat16) around the
forward), float32 adapters.
"""
import argparse
import json
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
GGUF_DIR = ROOT / "models/smollm2-135m-instruct"
RANK, ALPHA, DROPOUT, LR, CLIP = 8, 16.0, 0.05, 2e-4, 1.0
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# ---- preparation (once) -------------------------------------------------------------------------
def find_gguf():
    g = sorted(GGUF_DIR.glob("*.gguf")) if GGUF_DIR.is_dir() else []
    if g:
        return g[0]
    sys.exit(f"no GGUF in {GGUF_DIR}: run scripts/fetch-model.sh")


def prepare_models(work, names):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    gguf = find_gguf()
    out = {}
    tok_dir = work / "smollm2"
    if not (tok_dir / "config.json").exists():
        print(f"converting {gguf} to a float32 Hugging Face directory", flush=True)
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
        # save_pretrained refuses a model that came from a GGUF; its weights are plain float32 now.
        from safetensors.torch import save_file
        tok_dir.mkdir(parents=True, exist_ok=True)
        state = {k: v.contiguous() for k, v in model.state_dict().items()
                 if not (model.config.tie_word_embeddings and k == "lm_head.weight")}
        save_file(state, str(tok_dir / "model.safetensors"), metadata={"format": "pt"})
        cfg = model.config.to_dict()
        cfg.pop("quantization_config", None)
        cfg["torch_dtype"] = "float32"
        (tok_dir / "config.json").write_text(json.dumps(cfg, indent=2))
        tok.save_pretrained(tok_dir)
    if "smollm2" in names:
        out["smollm2"] = tok_dir
    if "random" in names:
        d = work / "random"
        if not (d / "config.json").exists():
            base = json.loads((tok_dir / "config.json").read_text())
            cfg = LlamaConfig(vocab_size=base["vocab_size"], hidden_size=256, intermediate_size=704,
                              num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=4,
                              max_position_embeddings=2048, rope_theta=10000.0, tie_word_embeddings=True,
                              bos_token_id=base.get("bos_token_id"), eos_token_id=base.get("eos_token_id"))
            torch.manual_seed(0)
            LlamaForCausalLM(cfg).to(torch.float32).save_pretrained(d, safe_serialization=True)
            for f in tok_dir.iterdir():
                if f.name.startswith(("tokenizer", "special_tokens", "chat_template")) or f.name == "vocab.json" \
                        or f.name == "merges.txt":
                    shutil.copy(f, d / f.name)
        out["random"] = d
    return out


def single_token_words(tok):
    """Common lower-case words the tokenizer keeps as one token with a leading space."""
    words = []
    for w in ("the of and to in is was for on that with as by at from it his an were are which this be "
              "has or had first one their its new after who they two her she been other when there all "
              "during into school time may years more most only over city some world would where later up "
              "such used many can state about national out known university united then made team film "
              "between both year three under season several made well also part north south east west "
              "game music people work water house light river stone green blue small large old young").split():
        if len(tok.encode(" " + w, add_special_tokens=False)) == 1 and w not in words:
            words.append(w)
    return words


def prepare_data(work, tok_dir, n, seq_len):
    """n prompt/completion records of seq_len tokens (prompt, completion, EOS) each, by HF's count."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tok_dir)
    words = single_token_words(tok)
    rng = random.Random(30)
    path = work / f"data_{n}x{seq_len}.jsonl"
    prompt_len = seq_len // 4
    rows = []
    while len(rows) < n:
        p = "Q:" + "".join(" " + rng.choice(words) for _ in range(prompt_len))
        c = "".join(" " + rng.choice(words) for _ in range(seq_len - prompt_len))
        rows.append({"prompt": p, "completion": c})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# ---- the PyTorch + PEFT side (a worker process) ---------------------------------------------------
def torch_worker(a):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(a.model_dir)
    rows = [json.loads(l) for l in pathlib.Path(a.data).read_text().splitlines() if l.strip()]
    seqs = []
    for r in rows:  # as Spore's prompt/completion path: loss on the completion and EOS
        p = tok.encode(r["prompt"], add_special_tokens=False)
        c = tok.encode(r["completion"], add_special_tokens=False) + [tok.eos_token_id]
        seqs.append((p + c, [-100] * len(p) + c))
    model = AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=DROPOUT, target_modules=TARGETS,
                                             task_type="CAUSAL_LM"))
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.0)
    tokens = 0
    t0 = None
    for s in range(a.steps):
        if s == 1:  # steps 2..N are timed, as Spore's
            t0, tokens = time.perf_counter(), 0
        batch = [seqs[(s * a.batch + k) % len(seqs)] for k in range(a.batch)]
        width = max(len(ids) for ids, _ in batch)
        ids = torch.full((len(batch), width), tok.eos_token_id, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for k, (i, l) in enumerate(batch):
            ids[k, :len(i)] = torch.tensor(i)
            labels[k, :len(l)] = torch.tensor(l)
            mask[k, :len(i)] = 1
            tokens += len(i)
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, CLIP)
        opt.step()
        print(f"step {s + 1} loss {loss.item():.4f}", flush=True)
    secs = time.perf_counter() - t0
    print(f"RESULT tokens={tokens} secs={secs:.4f} tokens_per_s={tokens / secs:.2f}", flush=True)


# ---- running and measuring -----------------------------------------------------------------------
def run_measured(cmd, env):
    """Runs cmd; returns (stdout+stderr text, seconds, peak RSS in MiB) of that process alone."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    text = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{text[-3000:]}")
    return text, time.perf_counter() - t0, usage.ru_maxrss / 1024.0


def spore_round(a, model_dir, data, out):
    shutil.rmtree(out, ignore_errors=True)
    n_tokens = a.batch * (a.seq_len + 8)  # one step = --batch whole records (each ~seq_len tokens)
    cmd = [a.spore, "finetune", "--model", str(model_dir), "--data", str(data), "--out", str(out),
           "--lora-rank", str(RANK), "--lora-alpha", str(ALPHA), "--lora-dropout", str(DROPOUT),
           "--lr", str(LR), "--max-grad-norm", str(CLIP), "--warmup", "0", "--batch-tokens", str(n_tokens),
           "--max-steps", str(a.steps), "--threads", str(a.threads)] + (["--bf16"] if a.bf16 else [])
    text, _, rss = run_measured(cmd, dict(os.environ, OMP_NUM_THREADS=str(a.threads)))
    done = {int(k): (float(loss), int(n), float(t)) for k, loss, n, t in
            re.findall(r"step (\d+)/\d+ .*?loss ([0-9.]+) .*? (\d+) tokens in ([0-9.]+) s", text)}
    if 1 not in done or a.steps not in done:
        raise RuntimeError("no first or last progress line from spore finetune:\n" + text[-3000:])
    # Cumulative tokens and seconds after step 1 and step N: steps 2..N's rate.
    return (done[a.steps][1] - done[1][1]) / (done[a.steps][2] - done[1][2]), rss, done[a.steps][0]


def torch_round(a, model_dir, data):
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    env.pop("OPENBLAS_CORETYPE", None)  # it slows OpenBLAS-backed peers on this machine (bench/README.md)
    cmd = [sys.executable, __file__, "--worker", "--model-dir", str(model_dir), "--data", str(data),
           "--steps", str(a.steps), "--batch", str(a.batch), "--threads", str(a.threads)] + (["--bf16"] if a.bf16 else [])
    text, _, rss = run_measured(cmd, env)
    m = re.search(r"RESULT tokens=(\d+) secs=([0-9.]+) tokens_per_s=([0-9.]+)", text)
    losses = re.findall(r"step \d+ loss ([0-9.]+)", text)
    return float(m.group(3)), rss, float(losses[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=str(ROOT / "build/release/bin/spore"))
    ap.add_argument("--models", default="smollm2,random")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "outputs/finetune-bench"))
    ap.add_argument("--bf16", action="store_true", help="both sides in bfloat16 mixed precision")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model-dir", help=argparse.SUPPRESS)
    ap.add_argument("--data", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        return torch_worker(a)
    if a.steps < 3:
        sys.exit("--steps must be at least 3 (the first is a warm-up, not timed)")
    if not os.path.exists(a.spore):
        sys.exit(f"{a.spore} is missing: cmake --build build/release --target spore")
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    names = [n for n in a.models.split(",") if n]
    models = prepare_models(work, names)
    data = prepare_data(work, work / "smollm2", a.batch * a.steps, a.seq_len)
    print(f"load before: {os.getloadavg()[0]:.2f}; {a.rounds} rounds x {a.steps} steps of {a.batch} x ~{a.seq_len} "
          f"tokens, {a.threads} threads", flush=True)
    res = {n: {"spore": [], "torch": [], "spore_rss": [], "torch_rss": []} for n in names}
    for r in range(a.rounds):
        for n in names:
            order = ("spore", "torch") if r % 2 == 0 else ("torch", "spore")
            for side in order:
                if side == "spore":
                    tps, rss, loss = spore_round(a, models[n], data, work / f"run_{n}")
                else:
                    tps, rss, loss = torch_round(a, models[n], data)
                res[n][side].append(tps)
                res[n][side + "_rss"].append(rss)
                print(f"round {r + 1} {n:8s} {side:6s} {tps:9.1f} tokens/s  peak RSS {rss:7.0f} MiB  last loss {loss:.4f}",
                      flush=True)
    print(f"load after: {os.getloadavg()[0]:.2f}")
    print("\n| model | Spore tokens/s | PyTorch + PEFT tokens/s | ratio | Spore peak RSS | PyTorch peak RSS |")
    print("|---|---|---|---|---|---|")
    for n in names:
        s, t = statistics.median(res[n]["spore"]), statistics.median(res[n]["torch"])
        print(f"| {n} | {s:.1f} | {t:.1f} | {s / t:.2f}x | {statistics.median(res[n]['spore_rss']):.0f} MiB | "
              f"{statistics.median(res[n]['torch_rss']):.0f} MiB |")


if __name__ == "__main__":
    sys.exit(main())
