"""llama.cpp's perplexity figures for `spore perplexity` (NOTE [Perplexity]).

Builds llama.cpp's own `llama-perplexity` and `llama-quantize` from llama-cpp-python's sdist (into
build/peers/llama-build, only those targets), re-quantizes the embedded SmolLM2
(models/smollm2-135m-instruct, scripts/fetch-model.sh; Q4_1) into each type below with
`llama-quantize --allow-requantize` (into build/peers/ppl-models/, not committed: 100-150 MB each),
runs llama-perplexity on each file over tests/fixtures/perplexity/spores.txt at each context, and
writes tests/fixtures/perplexity/llama_cpp_ppl.json: per file its SHA-256, llama.cpp's final
estimate, error bar and running estimates. tests/nlp/perplexity_cli_test.cc runs `spore perplexity`
on every file of that list it finds (the embedded one always, when fetched) and compares.

With --spore PATH it also runs Spore's command on each file and prints the agreement table.
--one-row adds a column of llama-perplexity with -ub 1: llama.cpp's one-row product for every
token (its decode path), which rounds differently from its batched prefill (tiled and repacked
GEMMs) and which Spore models (NOTE [k-quants in ggml's order]). --text scores another text and
--md writes the table as Markdown; either makes it a table run, which leaves the fixture JSON as it is.

    python3 tools/make_perplexity_fixtures.py [--types Q8_0,Q4_K_M | --types all] [--spore build/release/bin/spore]
        [--one-row] [--text FILE --contexts 512] [--md OUT.md]
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

from compare_llama_cpp import sha256_of as sha256_file
from llama_cpp_sdist import llama_cpp_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "build", "peers")
BUILD = os.path.join(PEERS, "llama-build")
MODELS = os.path.join(PEERS, "ppl-models")
TEXT = os.path.join(ROOT, "tests", "fixtures", "perplexity", "spores.txt")
OUT = os.path.join(ROOT, "tests", "fixtures", "perplexity", "llama_cpp_ppl.json")
EMBEDDED = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
# The types llama.cpp users download most, plus the legacy ones; Q5_0 is what llama-quantize
# writes for SmolLM2's 576-wide rows inside Q4_K_M / Q5_K_M (issue 27).
TYPES = ["Q8_0", "Q6_K", "Q5_K_M", "Q5_0", "Q4_K_M", "Q4_0"]
# --types all: every file type llama-quantize writes (its QUANT_OPTIONS, minus aliases and COPY).
ALL_TYPES = ["F32", "F16", "BF16", "Q8_0", "Q6_K", "Q5_K_M", "Q5_K_S", "Q5_1", "Q5_0", "Q4_K_M", "Q4_K_S", "Q4_1",
             "Q4_0", "IQ4_NL", "IQ4_XS", "MXFP4_MOE", "Q3_K_L", "Q3_K_M", "Q3_K_S", "IQ3_M", "IQ3_S", "IQ3_XS",
             "IQ3_XXS", "Q2_K", "Q2_K_S", "IQ2_M", "IQ2_S", "IQ2_XS", "IQ2_XXS", "IQ1_M", "IQ1_S", "TQ2_0", "TQ1_0",
             "Q2_0", "Q1_0"]
CONTEXTS = [128]


def peer_env():
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    return env


def llama_tools():
    """llama-perplexity and llama-quantize, built once into build/peers/llama-build."""
    tools = [os.path.join(BUILD, "bin", t) for t in ("llama-perplexity", "llama-quantize", "llama-imatrix")]
    if all(os.path.exists(t) for t in tools):
        return tools
    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"])
    subprocess.run(["nice", "cmake", "-S", src, "-B", BUILD, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                    "-DGGML_NATIVE=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                    "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=OFF", "-DLLAMA_BUILD_TOOLS=ON",
                    "-DGGML_OPENMP=OFF"], check=True, env=peer_env())
    subprocess.run(["nice", "cmake", "--build", BUILD, "-j2", "--target", "llama-perplexity", "llama-quantize",
                    "llama-imatrix"],
                   check=True, env=peer_env())
    return tools


def importance_matrix(tool):
    """llama-imatrix over the same text, for the types llama-quantize refuses to write without one
    (IQ1_*, IQ2_XXS/XS, Q2_K_S)."""
    path = os.path.join(MODELS, "imatrix.gguf")
    if not os.path.exists(path):
        subprocess.run(["nice", tool, "-m", EMBEDDED, "-f", TEXT, "-c", "128", "-o", path], check=True,
                       capture_output=True, env=peer_env())
    return path


def quantize(tool, imatrix_tool, ftype, path):
    """llama-quantize --allow-requantize from the embedded file; retried with an importance matrix
    when the type needs one. Returns whether the matrix was used, or why the type cannot be made."""
    cmd = ["nice", tool, "--allow-requantize", EMBEDDED, path, ftype]
    if subprocess.run(cmd, capture_output=True, env=peer_env()).returncode == 0:
        return False
    r = subprocess.run(cmd[:2] + ["--imatrix", importance_matrix(imatrix_tool)] + cmd[2:], capture_output=True,
                       text=True, env=peer_env())
    if r.returncode != 0:  # e.g. Q1_0: blocks of 128 and no fallback type for SmolLM2's 576-wide rows
        why = [line for line in (r.stdout + r.stderr).splitlines() if "fail" in line or "not divisible" in line]
        return "llama-quantize refuses it: " + (why[0].strip()[:200] if why else "exit %d" % r.returncode)
    return True


def llama_perplexity(tool, model, ctx, threads, text=TEXT, one_row=False):
    """llama.cpp's figures: the running estimates "[i]x.xxxx," and "Final estimate: PPL = x +/- y".
    one_row: micro-batches of one token (-ub 1), so every product takes llama.cpp's one-row path."""
    cmd = [tool, "-m", model, "-f", text, "-c", str(ctx), "-b", str(ctx), "-t", str(threads)]
    r = subprocess.run(cmd + (["-ub", "1"] if one_row else []), capture_output=True, text=True, env=peer_env())
    log = r.stdout + r.stderr
    if r.returncode != 0:
        sys.exit(f"llama-perplexity failed on {model}:\n{log[-3000:]}")
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    chunks = re.search(r"calculating perplexity over (\d+) chunks", log)
    running = [float(x) for x in re.findall(r"\[\d+\]([0-9.]+),", log)]
    if not final or not chunks:
        sys.exit(f"no estimate in llama-perplexity's output for {model}:\n{log[-3000:]}")
    return {"ppl": float(final.group(1)), "ppl_error": float(final.group(2)), "chunks": int(chunks.group(1)),
            "running": running}


def spore_perplexity(spore, model, ctx, threads, text=TEXT):
    r = subprocess.run([spore, "perplexity", "--model", model, "--file", text, "--ctx", str(ctx),
                        "--threads", str(threads)], capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": (r.stderr or r.stdout).strip()[-400:]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def percent(x, ref):
    return f"{100 * (x / ref - 1):+.3f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--types", default=",".join(TYPES))
    ap.add_argument("--contexts", default=",".join(map(str, CONTEXTS)))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--spore", help="also run this spore binary and print the agreement")
    ap.add_argument("--one-row", action="store_true", help="also run llama-perplexity -ub 1 (its one-row path)")
    ap.add_argument("--text", default=TEXT, help="the text to score (default: the test fixture's)")
    ap.add_argument("--md", help="write the agreement table here as Markdown")
    a = ap.parse_args()
    text = os.path.abspath(a.text)
    if not os.path.exists(EMBEDDED):
        sys.exit(f"{EMBEDDED} is missing: run scripts/fetch-model.sh first")
    perplexity_tool, quantize_tool, imatrix_tool = llama_tools()
    os.makedirs(MODELS, exist_ok=True)
    files = [("Q4_1 (embedded)", EMBEDDED)]
    for t in ALL_TYPES if a.types == "all" else [t for t in a.types.split(",") if t]:
        path = os.path.join(MODELS, f"SmolLM2-135M-Instruct.{t}.gguf")
        if not os.path.exists(path):
            made = quantize(quantize_tool, imatrix_tool, t, path)
            if isinstance(made, str):
                print(f"{t:16s} {made}", flush=True)
                continue
        files.append((t, path))
    version = os.path.basename(os.path.dirname(os.path.dirname(llama_cpp_source(PEERS, [sys.executable, "-m", "pip"]))))
    rows, table = [], []
    for ftype, path in files:
        for ctx in map(int, a.contexts.split(",")):
            ref = llama_perplexity(perplexity_tool, path, ctx, a.threads, text)
            row = {"ftype": ftype, "file": os.path.relpath(path, ROOT), "sha256": sha256_file(path), "ctx": ctx, **ref}
            rows.append(row)
            cells = [ftype, str(ctx), f"{ref['ppl']:.4f} ± {ref['ppl_error']:.4f}"]
            line = f"{ftype:16s} ctx {ctx:4d}  llama.cpp {ref['ppl']:.4f} +/- {ref['ppl_error']:.4f}"
            one = llama_perplexity(perplexity_tool, path, ctx, a.threads, text, one_row=True) if a.one_row else None
            if one:
                cells += [f"{one['ppl']:.4f}", percent(one["ppl"], ref["ppl"])]
                line += f"  one-row {one['ppl']:.4f} ({percent(one['ppl'], ref['ppl'])})"
            if a.spore:
                s = spore_perplexity(a.spore, path, ctx, a.threads, text)
                if "error" in s:
                    line += f"  spore: {s['error']}"
                    cells += ["refused: " + s["error"][:80], "-"] + (["-"] if one else [])
                else:
                    line += f"  spore {s['ppl']:.4f} +/- {s['ppl_error']:.4f}  diff {percent(s['ppl'], ref['ppl'])}"
                    cells += [f"{s['ppl']:.4f} ± {s['ppl_error']:.4f}", percent(s["ppl"], ref["ppl"])]
                    if one:
                        line += f"  vs one-row {percent(s['ppl'], one['ppl'])}"
                        cells.append(percent(s["ppl"], one["ppl"]))
            table.append(cells)
            print(line, flush=True)
    if a.md:
        head = ["file type (llama-quantize)", "ctx", "llama-perplexity"]
        if a.one_row:
            head += ["llama-perplexity -ub 1", "-ub 1 / default"]
        if a.spore:
            head += ["spore perplexity", "Spore / llama-perplexity"] + (["Spore / -ub 1"] if a.one_row else [])
        with open(a.md, "w") as f:
            f.write("| " + " | ".join(head) + " |\n|" + "---|" * len(head) + "\n")
            for cells in table:
                f.write("| " + " | ".join(cells) + " |\n")
        print(f"wrote {a.md}")
    if a.md or text != os.path.abspath(TEXT):
        return
    with open(OUT, "w") as f:
        json.dump({"what": "llama.cpp's llama-perplexity on SmolLM2-135M-Instruct re-quantized by llama-quantize "
                           "(NOTE [Perplexity]); spore perplexity must agree within 0.5%",
                   "made_by": "tools/make_perplexity_fixtures.py", "llama_cpp": version,
                   "text": os.path.relpath(TEXT, ROOT), "text_sha256": sha256_file(TEXT),
                   "command": "llama-perplexity -m FILE -f TEXT -c CTX -b CTX", "runs": rows}, f, indent=1)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
