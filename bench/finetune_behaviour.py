#!/usr/bin/env python3
"""Does `spore finetune` change what SmolLM2 does? (issue 30 item 5, NOTE [LoRA training])

usage: python3 bench/finetune_behaviour.py [--spore build/release/bin/spore] [--epochs 1]
           [--train 64] [--eval 24] [--threads 2] [--work outputs/finetune-behaviour]

The task: given a sentence that mentions a person, a city and a year, answer with exactly
    {"city": "<city>", "year": <year>}
and nothing else. The data set is made here from fixed word lists with a fixed seed (chat
records: one user turn "Where and when? <sentence>", one assistant turn with the JSON); the
held-out evaluation set uses other people, cities, years and sentence patterns than the training
set, so a model that passes it learnt the format, not the examples.

It trains a LoRA adapter with `spore finetune` on the embedded SmolLM2-135M-Instruct (the Q4_1
GGUF: QLoRA over the quantised base), then asks `spore generate --chat` (greedy) each held-out
question twice, with the base model and with `--lora <out>/adapter.gguf`, and reports:
  * exact-format rate: the answer, stripped, is one JSON object with exactly the keys city
    (a string) and year (an integer), written as {"city": "...", "year": N};
  * correct rate: in that format and with the sentence's city and year.
Standard library only (it runs the spore CLI); a few minutes on 2 cores.
"""
import argparse
import json
import os
import pathlib
import random
import re
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent

TRAIN_NAMES = ["Maria", "John", "Aiko", "Pedro", "Fatima", "Lars", "Chen", "Amara", "Igor", "Sofia", "Omar", "Emma"]
EVAL_NAMES = ["Nadia", "Tom", "Keiko", "Rafael", "Leila", "Sven"]
TRAIN_CITIES = ["Lisbon", "Berlin", "Tokyo", "Madrid", "Cairo", "Oslo", "Beijing", "Lagos", "Moscow", "Rome", "Dubai",
                "Paris", "Vienna", "Lima", "Seoul", "Dublin"]
EVAL_CITIES = ["Prague", "Nairobi", "Toronto", "Athens", "Bangkok", "Warsaw"]
TRAIN_PATTERNS = [
    "In {year}, {name} moved to {city}.",
    "{name} was born in {city} in {year}.",
    "{name} opened a bakery in {city} in {year}.",
    "The year was {year} when {name} first visited {city}.",
    "{name} studied music in {city}, starting in {year}.",
]
EVAL_PATTERNS = [
    "{name} arrived in {city} during the spring of {year}.",
    "Back in {year}, {name} found a job in {city}.",
    "{name} married in {city} in {year}.",
]
FORMAT = re.compile(r'^\{"city": "([^"\\]+)", "year": (\d{1,4})\}$')


def make_records(n, names, cities, patterns, years, rng):
    out = []
    for _ in range(n):
        name, city, year, pat = rng.choice(names), rng.choice(cities), rng.choice(years), rng.choice(patterns)
        out.append({"question": "Where and when? " + pat.format(name=name, city=city, year=year),
                    "city": city, "year": year})
    return out


def judge(text, rec):
    """(exact format, correct) for one answer."""
    t = text.strip()
    m = FORMAT.match(t)
    if not m:
        return False, False
    try:
        obj = json.loads(t)
    except ValueError:
        return False, False
    ok = set(obj) == {"city", "year"} and isinstance(obj["city"], str) and isinstance(obj["year"], int)
    return ok, ok and obj["city"] == rec["city"] and obj["year"] == rec["year"]


def generate(a, question, lora):
    cmd = [a.spore, "generate", "--chat", "--prompt", question, "--temperature", "0", "--max-tokens", "32",
           "--threads", str(a.threads), "--print-ids"]
    if a.model:
        cmd += ["--model", a.model]
    if lora:
        cmd += ["--lora", lora]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["text"]


def evaluate(a, records, lora, label):
    fmt = correct = 0
    samples = []
    for rec in records:
        text = generate(a, rec["question"], lora)
        f, c = judge(text, rec)
        fmt += f
        correct += c
        if len(samples) < 3:
            samples.append(text.strip().replace("\n", " ")[:90])
    n = len(records)
    print(f"{label}: exact format {fmt}/{n} ({100.0 * fmt / n:.0f} %), correct {correct}/{n} "
          f"({100.0 * correct / n:.0f} %)", flush=True)
    for s in samples:
        print(f"    e.g. {s!r}")
    return fmt / n, correct / n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=str(ROOT / "build/release/bin/spore"))
    ap.add_argument("--model", default="", help="default: the embedded SmolLM2-135M-Instruct")
    ap.add_argument("--train", type=int, default=64)
    ap.add_argument("--eval", type=int, default=24)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--work", default=str(ROOT / "outputs/finetune-behaviour"))
    a = ap.parse_args()
    work = pathlib.Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    rng = random.Random(30)
    train = make_records(a.train, TRAIN_NAMES, TRAIN_CITIES, TRAIN_PATTERNS, list(range(1950, 2000)), rng)
    held = make_records(a.eval, EVAL_NAMES, EVAL_CITIES, EVAL_PATTERNS, list(range(2000, 2024)), rng)
    data = work / "train.jsonl"
    data.write_text("".join(json.dumps({"messages": [
        {"role": "user", "content": r["question"]},
        {"role": "assistant", "content": json.dumps({"city": r["city"], "year": r["year"]})}]}) + "\n"
        for r in train))
    (work / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in held))
    print(f"load: {os.getloadavg()[0]:.2f}; {len(train)} training records ({data}), {len(held)} held out", flush=True)
    base = evaluate(a, held, None, "base model")
    out = work / "run"
    cmd = [a.spore, "finetune", "--data", str(data), "--out", str(out), "--lora-rank", "8", "--epochs",
           str(a.epochs), "--lr", str(a.lr), "--batch-tokens", "512", "--threads", str(a.threads), "--seed", "1"]
    if a.model:
        cmd += ["--model", a.model]
    t0 = time.time()
    subprocess.run(cmd, check=True)
    print(f"trained in {time.time() - t0:.0f} s", flush=True)
    tuned = evaluate(a, held, str(out / "adapter.gguf"), "with the adapter")
    print("\n| | exact format | correct city and year |")
    print("|---|---|---|")
    print(f"| base SmolLM2-135M-Instruct | {100 * base[0]:.0f} % | {100 * base[1]:.0f} % |")
    print(f"| + LoRA adapter ({len(train)} records, {a.epochs} epochs) | {100 * tuned[0]:.0f} % | {100 * tuned[1]:.0f} % |")
    return 0 if tuned[0] > base[0] else 1


if __name__ == "__main__":
    sys.exit(main())
