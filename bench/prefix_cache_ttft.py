#!/usr/bin/python3
"""Time to first token with and without the prefix cache (NOTE [Prefix cache]): two `spore serve`
processes on the same model, one with --no-prefix-cache, asked the same chat requests (one long
system prompt, a different question each time) in interleaved rounds; medians of the server's own
timings (first_token_ms, prompt_n, cache_n). Usage: prefix_cache_ttft.py SPORE MODEL [ROUNDS]."""
import json
import re
import statistics
import subprocess
import sys
import time
import urllib.request

SYSTEM = ("You are the support assistant of a company that sells and repairs bicycles. " * 2 +
          "Rules: answer in at most two sentences; quote prices in euros; never promise delivery dates; "
          "when a question is about safety, tell the customer to visit a shop; when unsure, say so. " +
          "Opening hours are nine to six on weekdays and ten to four on Saturdays; the shops are closed on "
          "Sundays and public holidays. Repairs of brakes, gears and wheels take one working day; frames "
          "and electric motors take a week. " * 3)
QUESTIONS = ["How much is a new chain?", "Are you open on Sunday?", "My brakes squeal, what should I do?",
             "Can you fix an electric motor?", "How long does a wheel repair take?", "Do you sell helmets?"]


def start(spore, model, extra):
    p = subprocess.Popen([spore, "serve", "--model", model, "--port", "0", "--slots", "1", "--ctx", "2048",
                          "--threads", "2"] + extra, stderr=subprocess.PIPE, text=True)
    for line in p.stderr:
        m = re.search(r"listening on (http://[0-9.]+:\d+)", line)
        if m:
            base = m.group(1)
            break
    for _ in range(600):
        try:
            if urllib.request.urlopen(base + "/health").status == 200:
                return p, base
        except Exception:
            time.sleep(0.1)
    raise SystemExit("server did not start")


def ask(base, q):
    body = {"messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}],
            "max_tokens": 1, "temperature": 0}
    req = urllib.request.Request(base + "/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req).read())["timings"]


def main():
    spore, model = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    on, on_base = start(spore, model, [])
    off, off_base = start(spore, model, ["--no-prefix-cache"])
    try:
        ask(on_base, "warm-up"), ask(off_base, "warm-up")
        res = {"on": [], "off": []}
        for r in range(rounds):
            for q in QUESTIONS:
                for name, base in (("on", on_base), ("off", off_base)) if r % 2 == 0 else (("off", off_base), ("on", on_base)):
                    res[name].append(ask(base, q))
        for name in ("on", "off"):
            t = res[name]
            print("prefix cache %-3s: first token median %.1f ms; prompt tokens computed %d, cached %d (median)" % (
                name, statistics.median(x["first_token_ms"] for x in t), statistics.median(x["prompt_n"] for x in t),
                statistics.median(x["cache_n"] for x in t)))
        print("ratio off/on of the median first-token time: %.2fx" % (
            statistics.median(x["first_token_ms"] for x in res["off"]) /
            statistics.median(x["first_token_ms"] for x in res["on"])))
    finally:
        on.terminate(), off.terminate()
        on.wait(), off.wait()


if __name__ == "__main__":
    main()
