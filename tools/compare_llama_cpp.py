#!/usr/bin/env python3
"""Greedy generation, Spore against llama.cpp, token for token (issue 12 item 6).

For fixed prompts, runs `spore generate --temperature 0 --print-ids` on a GGUF file, then
llama.cpp (through the PyPI package llama-cpp-python, a peer used only here, never linked) greedy
from the very same prompt ids, and compares the generated ids. It also reports whether the two
tokenizers encode each prompt alike. Both run past EOS (spore --ignore-eos) so every prompt
compares --tokens tokens.

Set up the peer once (builds llama.cpp from source, about 10 minutes on 2 cores):
    bash scripts/install-py-peers.sh llm
Run (after scripts/fetch-model.sh and a release build):
    .venv-peers/bin/python tools/compare_llama_cpp.py [--model FILE.gguf] [--tokens 64]
Writes outputs/compare_llama_cpp.json and prints one line per prompt; exits 1 on any mismatch.

--record FILE writes llama.cpp's greedy tokens (a fixture); --against FILE compares Spore with
them without the peer (plain Python; exit 77 when the model is missing), as the ctest
nlp.llama_cpp_parity does; --quick takes the first 2 prompts and 16 tokens.

--logits compares logits instead: for each prompt, the prompt ids plus llama.cpp's greedy
continuation go through one forward pass in both (`spore logits --kv-cache f16` and llama.cpp with
logits_all), and it prints the max abs difference of the logits per position, the positions whose
argmax differs, and llama.cpp's top-2 margin there (a small margin: a near tie that any rounding
difference flips; a large one: an op computes something else).
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODEL = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n",
    "The three laws of thermodynamics are",
    "深度学习框架在昇腾处理器上",
    "My favourite emoji are 🦙 and 🤗 because",
]


def spore_generate(spore, model, prompt, tokens, threads, kv_cache, numerics):
    cmd = [spore, "generate", "--model", model, "--prompt", prompt, "--max-tokens", str(tokens),
           "--temperature", "0", "--ignore-eos", "--print-ids", "--threads", str(threads), "--kv-cache", kv_cache,
           "--numerics", numerics]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"spore generate failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout), p.stderr.strip()


def llama_greedy(llm, prompt_ids, tokens):
    out = []
    for tok in llm.generate(prompt_ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
        out.append(int(tok))
        if len(out) == tokens:
            break
    return out


def spore_logits(spore, model, ids, kv_cache, numerics):
    cmd = [spore, "logits", "--model", model, "--ids", ",".join(map(str, ids)), "--kv-cache", kv_cache,
           "--numerics", numerics]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"spore logits failed ({p.returncode}): {p.stderr.strip()}")
    import numpy as np
    return np.array(json.loads(p.stdout), dtype=np.float32)


def llama_logits(llm, ids):
    import numpy as np
    llm.reset()
    llm.eval(ids)
    return np.array(llm.scores[:len(ids)], dtype=np.float32)


def compare_logits(a, llm, prompt_ids_of):
    """One row per prompt: per-position max abs logit difference and argmax agreement."""
    import numpy as np
    rows, worst = [], 0.0
    for prompt in PROMPTS[:2] if a.quick else PROMPTS:
        prompt_ids = prompt_ids_of(prompt)
        ids = prompt_ids + llama_greedy(llm, prompt_ids, a.tokens)
        mine, ref = spore_logits(a.spore, a.model, ids, a.kv_cache, a.numerics), llama_logits(llm, ids)
        diff = np.abs(mine - ref).max(axis=1)
        am, ar = mine.argmax(axis=1), ref.argmax(axis=1)
        top2 = np.sort(ref, axis=1)[:, -2:]
        flips = [{"position": int(i), "spore": int(am[i]), "llama_cpp": int(ar[i]),
                  "llama_cpp_margin": float(top2[i, 1] - top2[i, 0])} for i in np.nonzero(am != ar)[0]]
        gen = slice(len(prompt_ids) - 1, len(ids) - 1)  # positions whose argmax is a generated token
        worst = max(worst, float(diff.max()))
        rows.append({"prompt": prompt, "ids": ids, "max_abs_diff_per_position": [float(x) for x in diff],
                     "argmax_flips": flips})
        print(f"max |dlogit| {diff.max():.4f} (mean over positions {diff.mean():.4f}, generated part "
              f"{diff[gen].max():.4f}), argmax differs at {len(flips)}/{len(ids)} positions: {prompt!r}")
        for f in flips[:3]:
            print(f"     position {f['position']}: spore {f['spore']} llama.cpp {f['llama_cpp']} "
                  f"(llama.cpp's top-2 margin {f['llama_cpp_margin']:.4f})")
    return rows, worst


def sha256_of(path):
    import hashlib
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record(a, llm, llama_cpp, add_bos):
    """Writes llama.cpp's greedy ids (and its top-2 margin per token) for every prompt to a.record."""
    import numpy as np
    rows = []
    for prompt in PROMPTS:
        prompt_ids = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=False)
        ids = llama_greedy(llm, prompt_ids, a.tokens)
        top2 = np.sort(llama_logits(llm, prompt_ids + ids)[len(prompt_ids) - 1:-1], axis=1)[:, -2:]
        rows.append({"prompt": prompt, "prompt_ids": prompt_ids, "llama_cpp_ids": ids,
                     "llama_cpp_margins": [round(float(m), 4) for m in top2[:, 1] - top2[:, 0]]})
        print(f"recorded {len(ids)} tokens (smallest top-2 margin {min(rows[-1]['llama_cpp_margins']):.4f}): {prompt!r}")
    out = {"what": "llama.cpp's greedy tokens for tools/compare_llama_cpp.py --against (issue 12 item 6)",
           "made_by": "tools/compare_llama_cpp.py --record", "llama_cpp_python": llama_cpp.__version__,
           "model_file": os.path.basename(a.model), "model_sha256": sha256_of(a.model), "tokens": a.tokens,
           "prompts": rows}
    with open(a.record, "w") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {a.record}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-cache", default="f16", choices=["f16", "bf16", "f32"], help="Spore's KV cache dtype (llama.cpp's is f16)")
    ap.add_argument("--numerics", default="auto", choices=["auto", "reference", "ggml"],
                    help="Spore's numerics (auto: ggml for a GGUF file, NOTE [LLM numerics])")
    ap.add_argument("--out", default=os.path.join(ROOT, "outputs", "compare_llama_cpp.json"))
    ap.add_argument("--logits", action="store_true", help="compare every position's logits instead of generating")
    ap.add_argument("--record", metavar="JSON", help="write llama.cpp's greedy tokens to JSON (a fixture for --against)")
    ap.add_argument("--against", metavar="JSON",
                    help="compare with tokens --record wrote instead of running llama.cpp (needs no peer; exits 77, "
                         "skipped, when the model file is missing or is not the recorded one)")
    ap.add_argument("--quick", action="store_true", help="only the first 2 prompts (and 16 tokens when generating)")
    a = ap.parse_args()
    if a.against:
        with open(a.against) as f:
            fixture = json.load(f)
        if not os.path.exists(a.model):
            print(f"SKIP: {a.model} is not there (bash scripts/fetch-model.sh)")
            return 77
        if sha256_of(a.model) != fixture["model_sha256"]:
            print(f"SKIP: {a.model} is not the file {a.against} was recorded from (sha256 {fixture['model_sha256']})")
            return 77
        refs = fixture["prompts"]
        a.tokens = min(a.tokens, fixture["tokens"])
        version, l_prompt_of, l_ids_of, detok = f"recorded ({fixture['llama_cpp_python']})", None, None, None
    else:
        try:
            import llama_cpp
        except ImportError:
            sys.exit("llama-cpp-python is missing: bash scripts/install-py-peers.sh llm, then run this with .venv-peers/bin/python")
        llm = llama_cpp.Llama(model_path=a.model, n_ctx=512, n_batch=512, n_threads=a.threads, seed=0, verbose=False,
                              logits_all=a.logits or bool(a.record))
        add_bos = bool(llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true")
        if a.record:
            return record(a, llm, llama_cpp, add_bos)
        if a.logits:
            rows, worst = compare_logits(a, llm, lambda p: llm.tokenize(p.encode("utf-8"), add_bos=add_bos, special=False))
            result = {"model": a.model, "kv_cache": a.kv_cache, "numerics": a.numerics,
                      "llama_cpp_python": llama_cpp.__version__, "tokens": a.tokens, "max_abs_diff": worst,
                      "prompts": rows}
            out = a.out.replace(".json", "_logits.json")
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, "w") as f:
                json.dump(result, f, ensure_ascii=False)
            print(f"logits max abs difference over {len(rows)} prompts: {worst:.4f}; details in {out}")
            return 0
        refs = [{"prompt": p} for p in PROMPTS]
        version = llama_cpp.__version__
        l_prompt_of = lambda p: llm.tokenize(p.encode("utf-8"), add_bos=add_bos, special=False)
        l_ids_of = lambda ids: llama_greedy(llm, ids, a.tokens)
        detok = lambda ids: llm.detokenize(ids).decode("utf-8", errors="replace")
    if a.quick:
        refs, a.tokens = refs[:2], min(a.tokens, 16)
    rows, all_ok = [], True
    for ref in refs:
        prompt = ref["prompt"]
        s, figures = spore_generate(a.spore, a.model, prompt, a.tokens, a.threads, a.kv_cache, a.numerics)
        # llama.cpp's own tokenization of the prompt (its BOS rule from the GGUF), for the record;
        # its greedy run starts from Spore's prompt ids so that only the model's numerics differ.
        l_prompt = ref["prompt_ids"] if l_prompt_of is None else l_prompt_of(prompt)
        l_ids = ref["llama_cpp_ids"][:a.tokens] if l_ids_of is None else l_ids_of(s["prompt_ids"])
        same = 0
        while same < min(len(l_ids), len(s["ids"])) and l_ids[same] == s["ids"][same]:
            same += 1
        ok = same == a.tokens and len(s["ids"]) == a.tokens and s["prompt_ids"] == l_prompt
        all_ok &= ok
        row = {"prompt": prompt, "prompt_ids_spore": s["prompt_ids"], "prompt_ids_llama_cpp": l_prompt,
               "prompt_ids_match": s["prompt_ids"] == l_prompt, "tokens": a.tokens, "matching_prefix": same,
               "ok": ok, "spore_ids": s["ids"], "llama_cpp_ids": l_ids, "spore_text": s["text"],
               "llama_cpp_text": detok(l_ids) if detok else None, "spore_figures": figures}
        rows.append(row)
        print(f"{'OK  ' if ok else 'DIFF'} {same:3d}/{a.tokens} tokens equal, prompt ids "
              f"{'equal' if row['prompt_ids_match'] else 'DIFFER'}: {prompt!r}")
        if not ok and same < len(l_ids):
            margin = ref.get("llama_cpp_margins", [None] * (same + 1))[same]
            print(f"     first difference at token {same}: spore {s['ids'][same:same + 4]} llama.cpp {l_ids[same:same + 4]}"
                  + (f" (llama.cpp's top-2 margin there {margin})" if margin is not None else ""))
    result = {"model": os.path.relpath(a.model, ROOT) if a.model.startswith(ROOT) else a.model, "kv_cache": a.kv_cache,
              "numerics": a.numerics, "llama_cpp_python": version, "tokens": a.tokens, "all_match": all_ok,
              "prompts": rows}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    print(f"{'all' if all_ok else 'NOT all'} {len(rows)} prompts match llama.cpp for {a.tokens} tokens; details in {a.out}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
