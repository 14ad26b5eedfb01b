#!/usr/bin/env python3
"""Sentence-embedding throughput: `spore embed` against llama.cpp's `llama-embedding` (issue 29 item 2).

The model: a random-weight encoder with all-MiniLM-L6-v2's shapes (BERT, hidden 384, 6 layers, 12
heads, MLP 1536, mean pooling), written by transformers as a Hugging Face directory and converted
to GGUF (F32 and F16) by llama.cpp's own convert_hf_to_gguf.py, into build/bench-models/ (the
vocabulary is tools/make_embedding_fixtures.py's small WordPiece one: speed does not depend on the
table's size, only on the tokens per sentence, which both engines count the same). The texts: N
lines of this repository's design notes, cut at 200 characters.

Both programs embed the same file (one sentence per line, mean pooling, L2-normalised, every vector
printed: Spore as JSON, llama-embedding with --embd-output-format array), at 1 and 2 threads, in
interleaved rounds (the order flips each round), at the native level and with `--isa avx2` at the
AVX2 level (SPORE_CPU_ISA=avx2, and llama.cpp built without AVX-512). Throughput is sentences per
second of the embedding work alone: N / (time(N sentences) - time(1 sentence)), so the start-up
(loading, printing the first vector) of each program cancels. Medians over the rounds.

    .venv-peers/bin/python bench/embed_bench.py [--rounds 3] [--sentences 512] [--isa native|avx2] [--write]
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from llama_cpp_sdist import llama_cpp_source, llama_tool  # noqa: E402

PEERS = os.path.join(ROOT, "build", "peers")
MODELS = os.path.join(ROOT, "build", "bench-models", "minilm-l6-shape")
SPORE = os.path.join(ROOT, "build", "release", "bin", "spore")
MINILM = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
              max_position_embeddings=512, layer_norm_eps=1e-12)


def pip():
    p = os.path.join(ROOT, ".venv-peers", "bin", "pip")
    return [p if os.path.exists(p) else "pip"]


def peer_env():
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)  # the environment's trap; only for the peer's command
    env["OMP_WAIT_POLICY"] = "passive"
    return env


def make_model():
    """The MiniLM-shaped directory and its GGUFs (kept when present)."""
    if all(os.path.exists(os.path.join(MODELS, f"model-{t}.gguf")) for t in ("f32", "f16")):
        return
    import pathlib

    import torch
    import transformers
    import make_embedding_fixtures as fx
    src = llama_cpp_source(PEERS, pip())
    sys.path.insert(0, src)
    sys.path.insert(1, os.path.join(src, "gguf-py"))
    import convert_hf_to_gguf
    from conversion import base
    # llama.cpp names a pre-tokenizer by hashing a published tokenizer's output; this one is not
    # published, so the converter is told the WordPiece name (as make_embedding_fixtures does).
    base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "jina-v2-en"
    d = pathlib.Path(MODELS)
    fx.write_tokenizer(d)
    cfg = transformers.BertConfig(vocab_size=len(fx.vocab_tokens()), **MINILM, type_vocab_size=2, hidden_act="gelu")
    torch.manual_seed(5)
    m = transformers.BertModel(cfg, add_pooling_layer=False).eval()
    fx.widen(m, 15)
    m.save_pretrained(str(d))
    fx.write_pooling(d, MINILM["hidden_size"])
    for t in ("f32", "f16"):
        sys.argv = ["convert_hf_to_gguf.py", str(d), "--outfile", str(d / f"model-{t}.gguf"), "--outtype", t]
        convert_hf_to_gguf.main()


def texts(n):
    lines = []
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
        for line in f:
            line = line.strip().lstrip("#*- ").strip()
            if len(line) >= 40:
                lines.append(line[:200])
    return (lines * (n // max(1, len(lines)) + 1))[:n]


def timed(cmd, env):
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({r.returncode}): {r.stderr.decode(errors='replace')[-800:]}")
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--write", action="store_true", help="replace this ISA's table in bench/README.md")
    a = ap.parse_args()
    make_model()
    embedding = llama_tool(PEERS, pip(), "llama-embedding", a.isa, env=peer_env())
    spore_env = dict(os.environ)
    if a.isa == "avx2":
        spore_env["SPORE_CPU_ISA"] = "avx2"
    tmp = tempfile.mkdtemp(prefix="spore-embed-bench-")
    big, one = os.path.join(tmp, "big.txt"), os.path.join(tmp, "one.txt")
    sents = texts(a.sentences)
    open(big, "w", encoding="utf-8").write("\n".join(sents) + "\n")
    open(one, "w", encoding="utf-8").write(sents[0] + "\n")
    load = []
    rows = []
    for model in ("f32", "f16"):
        gguf = os.path.join(MODELS, f"model-{model}.gguf")
        for threads in [int(t) for t in a.threads.split(",")]:
            def spore(f):
                return [SPORE, "embed", "--model", gguf, "--file", f, "--threads", str(threads)]

            def llama(f):
                # The model's context (512) as batch: llama-embedding packs sentences into batches of
                # that many tokens (each sentence in one ubatch, as an encoder needs); a larger batch
                # only makes its attention, which spans the whole batch under a mask, slower.
                return [embedding, "-m", gguf, "-f", f, "-t", str(threads), "--pooling", "mean", "--embd-normalize",
                        "2", "--embd-output-format", "array", "-c", "512", "-b", "512", "-ub", "512"]

            ours, theirs = [], []
            for r in range(a.rounds):
                load.append(os.getloadavg()[0])
                order = [("s", spore, spore_env, ours), ("l", llama, peer_env(), theirs)]
                for _, cmd, env, out in (order if r % 2 == 0 else order[::-1]):
                    t_big, t_one = timed(cmd(big), env), timed(cmd(one), env)
                    out.append((len(sents) - 1) / max(1e-9, t_big - t_one))
            s, l = statistics.median(ours), statistics.median(theirs)
            rows.append((model.upper(), threads, s, l))
            print(f"{model} {threads} thr: spore {s:.1f} sent/s, llama-embedding {l:.1f} sent/s, ratio {s / l:.2f}x",
                  flush=True)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    isa = "AVX2 level (SPORE_CPU_ISA=avx2; llama.cpp without AVX-512)" if a.isa == "avx2" else "native level"
    table = [f"Machine: {os.uname().nodename}, {os.cpu_count()} cores, {isa}; {now}; load average (1 min) "
             f"{min(load):.1f}-{max(load):.1f}; {a.rounds} interleaved rounds, medians; {len(sents)} sentences.", "",
             "| model | type | threads | spore sentences/s | llama-embedding sentences/s | spore / llama.cpp |",
             "|---|---|---|---|---|---|"]
    for model, threads, s, l in rows:
        table.append(f"| MiniLM-L6 shape | {model} | {threads} | {s:.1f} | {l:.1f} | {s / l:.2f}x |")
    print("\n".join(table))
    if a.write:
        begin, end = f"<!-- embed-bench-{a.isa}:begin -->", f"<!-- embed-bench-{a.isa}:end -->"
        path = os.path.join(ROOT, "bench", "README.md")
        text = open(path, encoding="utf-8").read()
        if begin not in text:
            raise SystemExit(f"bench/README.md has no {begin} marker")
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        open(path, "w", encoding="utf-8").write(head + begin + "\n" + "\n".join(table) + "\n" + end + tail)


if __name__ == "__main__":
    main()
