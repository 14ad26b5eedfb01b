#!/usr/bin/env python3
"""Tokenizer benchmark driver: Spore vs Hugging Face `tokenizers` and `tiktoken`, one thread.

Builds a multi-MB mixed-language corpus (the chapter's Chinese and English text, Spore's C++
sources and docs, the tokenizer fixture texts in ten scripts), then runs interleaved rounds:
Spore's bench/tokenizer_bench program, `tokenizers` (Tokenizer.from_file, encode per line) and,
for the byte-level Qwen3 vocabulary, `tiktoken` built from the same ranks and pre-tokenizer
pattern. Every side encodes the same lines; ids are checked to be equal. Prints medians and
the ratios (Spore's MB/s over each peer's).

    /work/main/.venv-peers/bin/python bench/tokenizer_bench.py [--rounds 5] [--mb 8]
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import tempfile
import time

os.environ["TOKENIZERS_PARALLELISM"] = "false"
os.environ["RAYON_NUM_THREADS"] = "1"

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIX = os.path.join(ROOT, "tests", "fixtures", "tokenizers")
QWEN_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
                r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def corpus(mb):
    parts = []
    chapter = "/work/shared/reference/chapter5-mindspore-on-ascend.txt"
    if os.path.exists(chapter):
        parts.append(open(chapter, encoding="utf-8").read())
    for pat in ["src/**/*.cc", "src/**/*.h", "docs/*.md", "tools/*.py"]:
        for f in sorted(glob.glob(os.path.join(ROOT, pat), recursive=True)):
            parts.append(open(f, encoding="utf-8", errors="replace").read())
    cases = json.load(open(os.path.join(FIX, "qwen3_cases.json"), encoding="utf-8"))["cases"]
    parts.append("\n".join(c["text"] for c in cases if not c["add_special_tokens"]))
    base = "\n".join(parts)
    text = base
    while len(text.encode()) < mb * 1e6:
        text += "\n" + base
    return text


def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def tiktoken_qwen():
    import tiktoken
    j = json.load(open(os.path.join(FIX, "qwen3", "tokenizer.json"), encoding="utf-8"))
    dec = byte_decoder()
    ranks = {bytes(dec[ch] for ch in tok): i for tok, i in j["model"]["vocab"].items()}
    special = {a["content"]: a["id"] for a in j["added_tokens"]}
    return tiktoken.Encoding("qwen3", pat_str=QWEN_PATTERN, mergeable_ranks=ranks,
                             special_tokens=special)


def time_peer(encode, lines):
    """Wall and CPU seconds (this process) to encode every line."""
    t0, c0 = time.perf_counter(), time.process_time()
    for line in lines:
        encode(line)
    return time.perf_counter() - t0, time.process_time() - c0


def time_load(path):
    from tokenizers import Tokenizer
    t0, c0 = time.perf_counter(), time.process_time()
    tok = Tokenizer.from_file(path)
    return tok, time.perf_counter() - t0, time.process_time() - c0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--mb", type=float, default=8)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "release", "bench", "tokenizer_bench"))
    args = ap.parse_args()
    import tokenizers
    import tiktoken

    text = corpus(args.mb)
    lines = [l + "\n" for l in text.split("\n")]
    mb = sum(len(l.encode()) for l in lines) / 1e6
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("".join(lines)[:-1] + "\n" if lines else "")
        path = f.name
    print(f"corpus: {mb:.2f} MB, {len(lines)} lines; tokenizers {tokenizers.__version__}, "
          f"tiktoken {tiktoken.__version__}")
    results = {}
    for name in ["qwen3", "mistral"]:
        tjson = os.path.join(FIX, name, "tokenizer.json")
        rows = {k: [] for k in ["spore", "tokenizers", "tiktoken", "spore_load", "tokenizers_load",
                                "spore_cpu", "tokenizers_cpu", "tiktoken_cpu", "spore_load_cpu",
                                "tokenizers_load_cpu"]}
        hf, _, _ = time_load(tjson)
        tk = tiktoken_qwen() if name == "qwen3" else None
        # Same ids on a sample (the full parity is tests/nlp).
        sample = lines[:2000]
        spore_ids = json.loads(subprocess.run(
            [os.path.join(ROOT, "build", "release", "bin", "spore"), "tokenize", tjson, "--batch",
             "/dev/stdin"], input=json.dumps(sample), capture_output=True, text=True, check=True).stdout)
        assert spore_ids == [hf.encode(l, add_special_tokens=False).ids for l in sample], name
        if tk:
            assert spore_ids == [tk.encode_ordinary(l) for l in sample], "tiktoken ids differ"
        for r in range(args.rounds):
            out = json.loads(subprocess.run([args.bench, tjson, path], capture_output=True,
                                            text=True, check=True).stdout)
            rows["spore"].append(out["mb"] / out["encode_s"])
            rows["spore_cpu"].append(out["mb"] / out["encode_cpu_s"])
            rows["spore_load"].append(out["load_s"])
            rows["spore_load_cpu"].append(out["load_cpu_s"])
            w, c = time_peer(lambda l: hf.encode(l, add_special_tokens=False).ids, lines)
            rows["tokenizers"].append(mb / w)
            rows["tokenizers_cpu"].append(mb / c)
            if tk:
                w, c = time_peer(tk.encode_ordinary, lines)
                rows["tiktoken"].append(mb / w)
                rows["tiktoken_cpu"].append(mb / c)
            _, w, c = time_load(tjson)
            rows["tokenizers_load"].append(w)
            rows["tokenizers_load_cpu"].append(c)
            print(name, "round", r, {k: round(v[-1], 3) for k, v in rows.items() if v})
        med = {k: statistics.median(v) for k, v in rows.items() if v}
        results[name] = med
        line = (f"{name}: spore {med['spore']:.2f} MB/s, tokenizers {med['tokenizers']:.2f} MB/s "
                f"({med['spore'] / med['tokenizers']:.2f}x)")
        if "tiktoken" in med:
            line += f", tiktoken {med['tiktoken']:.2f} MB/s ({med['spore'] / med['tiktoken']:.2f}x)"
        line += (f"; load spore {med['spore_load']:.3f} s, tokenizers {med['tokenizers_load']:.3f} s "
                 f"({med['tokenizers_load'] / med['spore_load']:.2f}x)")
        print(line)
        line = (f"{name} (CPU time): spore {med['spore_cpu']:.2f} MB/s, tokenizers "
                f"{med['tokenizers_cpu']:.2f} MB/s ({med['spore_cpu'] / med['tokenizers_cpu']:.2f}x)")
        if "tiktoken_cpu" in med:
            line += (f", tiktoken {med['tiktoken_cpu']:.2f} MB/s "
                     f"({med['spore_cpu'] / med['tiktoken_cpu']:.2f}x)")
        line += (f"; load spore {med['spore_load_cpu']:.3f} s, tokenizers "
                 f"{med['tokenizers_load_cpu']:.3f} s "
                 f"({med['tokenizers_load_cpu'] / med['spore_load_cpu']:.2f}x)")
        print(line)
    os.unlink(path)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
