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


def spore_generate(spore, model, prompt, tokens, threads, kv_cache):
    cmd = [spore, "generate", "--model", model, "--prompt", prompt, "--max-tokens", str(tokens),
           "--temperature", "0", "--ignore-eos", "--print-ids", "--threads", str(threads), "--kv-cache", kv_cache]
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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--kv-cache", default="f16", choices=["f16", "bf16", "f32"], help="Spore's KV cache dtype (llama.cpp's is f16)")
    ap.add_argument("--out", default=os.path.join(ROOT, "outputs", "compare_llama_cpp.json"))
    a = ap.parse_args()
    try:
        import llama_cpp
    except ImportError:
        sys.exit("llama-cpp-python is missing: bash scripts/install-py-peers.sh llm, then run this with .venv-peers/bin/python")
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=512, n_batch=512, n_threads=a.threads, seed=0, verbose=False)
    rows, all_ok = [], True
    for prompt in PROMPTS:
        s, figures = spore_generate(a.spore, a.model, prompt, a.tokens, a.threads, a.kv_cache)
        # llama.cpp's own tokenization of the prompt (its BOS rule from the GGUF), for the record.
        add_bos = bool(llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true")
        l_prompt = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=False)
        l_ids = llama_greedy(llm, s["prompt_ids"], a.tokens)
        same = 0
        while same < min(len(l_ids), len(s["ids"])) and l_ids[same] == s["ids"][same]:
            same += 1
        ok = same == a.tokens and len(s["ids"]) == a.tokens
        all_ok &= ok
        row = {"prompt": prompt, "prompt_ids_spore": s["prompt_ids"], "prompt_ids_llama_cpp": l_prompt,
               "prompt_ids_match": s["prompt_ids"] == l_prompt, "tokens": a.tokens, "matching_prefix": same,
               "ok": ok, "spore_ids": s["ids"], "llama_cpp_ids": l_ids, "spore_text": s["text"],
               "llama_cpp_text": llm.detokenize(l_ids).decode("utf-8", errors="replace"), "spore_figures": figures}
        rows.append(row)
        print(f"{'OK  ' if ok else 'DIFF'} {same:3d}/{a.tokens} tokens equal, prompt ids "
              f"{'equal' if row['prompt_ids_match'] else 'DIFFER'}: {prompt!r}")
        if not ok and same < len(l_ids):
            print(f"     first difference at token {same}: spore {s['ids'][same:same + 4]} llama.cpp {l_ids[same:same + 4]}")
    result = {"model": os.path.relpath(a.model, ROOT) if a.model.startswith(ROOT) else a.model, "kv_cache": a.kv_cache,
              "llama_cpp_python": llama_cpp.__version__, "tokens": a.tokens, "all_match": all_ok, "prompts": rows}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, ensure_ascii=False, indent=1)
    print(f"{'all' if all_ok else 'NOT all'} {len(rows)} prompts match for {a.tokens} tokens; details in {a.out}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
