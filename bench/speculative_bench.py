"""Speculative decoding on an input-grounded prompt (issue 28, NOTE [Speculative decoding]).

`spore generate` greedy on a prompt whose answer copies a given text (an edit: the same paragraph
with one change asked for), with and without `--spec-type ngram` (prompt lookup), in interleaved
rounds (the order flips every round). Checks that the generated ids are identical and reports
the median decode tokens/s of each, their ratio and the acceptance rate from the figures line.

    python3 bench/speculative_bench.py [--rounds 3] [--threads 2] [--model FILE] [--draft-max 8]

Target (issue 28): at least 1.5x decode tokens/s with identical greedy output. Prints one table
row; records nothing (copy it into bench/README.md with the machine and its load).
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT = ("The engine keeps one KV cache for every slot and runs each step as one batched forward pass. "
        "Queued requests take free slots in arrival order, and a slot whose last sequence shares a prefix "
        "with a new prompt is reused without recomputing those rows. Stop strings, grammars and sampling "
        "options apply per request, and a cancelled request frees its slot at once.")
PROMPT = ("Rewrite the following paragraph exactly as it is, but replace the word 'slot' with 'lane' "
          "everywhere.\n\nParagraph: " + TEXT + "\n\nRewritten paragraph:")
FIGURES = re.compile(r"decode (\d+) tokens, ([0-9.]+) tokens/s(?:; speculative ngram: (\d+) drafted, (\d+) accepted)?")


def generate(a, spec):
    cmd = [a.spore, "generate", "--prompt", PROMPT, "--max-tokens", str(a.max_tokens), "--temperature", "0",
           "--threads", str(a.threads), "--print-ids", "--chat"]
    if a.model:
        cmd += ["--model", a.model, "--allow-unverified"]
    if spec:
        cmd += ["--spec-type", "ngram", "--spec-draft-n-max", str(a.draft_max)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{p.stderr[-2000:]}")
    m = FIGURES.search(p.stderr)
    if not m:
        sys.exit(f"no figures line in:\n{p.stderr}")
    rate = int(m.group(4)) / int(m.group(3)) if m.group(3) and int(m.group(3)) else 0.0
    return json.loads(p.stdout)["ids"], float(m.group(2)), rate


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build", "release", "bin", "spore"))
    ap.add_argument("--model", default="", help="default: the embedded SmolLM2-135M-Instruct")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=128)
    ap.add_argument("--draft-max", type=int, default=8)
    a = ap.parse_args()
    plain, spec, rates, same = [], [], [], True
    for r in range(a.rounds):
        runs = [False, True] if r % 2 == 0 else [True, False]
        got = {}
        for s in runs:
            ids, tps, rate = generate(a, s)
            got[s] = ids
            (spec if s else plain).append(tps)
            if s:
                rates.append(rate)
        same = same and got[True] == got[False]
    p, s = statistics.median(plain), statistics.median(spec)
    print("| model | plain decode tokens/s | ngram decode tokens/s | ratio (>= 1.5) | acceptance | identical greedy ids |")
    print("|---|---|---|---|---|---|")
    print(f"| {os.path.basename(a.model) or 'SmolLM2-135M-Instruct (embedded)'} | {p:.1f} | {s:.1f} | {s / p:.2f}x | "
          f"{100 * statistics.median(rates):.0f}% | {'yes' if same else 'NO'} |")
    if not same:
        sys.exit("the speculative run's greedy ids differ from the plain run's")


if __name__ == "__main__":
    main()
