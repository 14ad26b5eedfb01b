#!/usr/bin/env python3
"""spore serve against llama-cpp-python's server on the same GGUF (issue 13, NOTE [Machine gate]).

Both servers run at once on free loopback ports, each with the same threads; the load is the
same for both: streamed chat completions (temperature 0, MAX_TOKENS each) at 1, 4 and 16
concurrent streams, REQUESTS = max(4, 2 x streams) per cell (each stream sends its next
request as soon as one ends), in interleaved rounds (each round runs
every cell on both servers, the server order alternating) so the machine's swings fall on both.
Per cell: aggregate decode tokens/s (completion tokens of all requests / the cell's wall time),
time to first token p50/p95; the table gives medians over rounds and the ratio spore / peer, and
spore's scaling (aggregate at 16 streams / at 1). With --write, the table replaces the section
between the markers in bench/README.md.

  python3 bench/serve_bench.py [--rounds 3] [--max-tokens 32] [--threads 2] [--write]

The peer is `python -m llama_cpp.server` from .venv-peers (scripts/install-py-peers.sh llm);
OPENBLAS_CORETYPE is unset for it only.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from serve_load_test import free_port, stream_chat, wait_healthy  # noqa: E402

GGUF = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
BEGIN, END = "<!-- serve_bench:begin -->", "<!-- serve_bench:end -->"
PROMPT = "Tell me a long story about a robot who learns to paint. Story number %d."


def percentile(xs, q):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    pos = q / 100 * (len(xs) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def cell(port, streams, requests, max_tokens, require_usage):
    results, lock, nxt = [], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= requests:
                return
            r = stream_chat("127.0.0.1", port, PROMPT % i, max_tokens, timeout=600, require_usage=require_usage)
            with lock:
                results.append(r)

    t0 = time.perf_counter()
    ts = [threading.Thread(target=worker) for _ in range(streams)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    wall = time.perf_counter() - t0
    failed = [r for r in results if not r["ok"]]
    ok = [r for r in results if r["ok"]]
    tokens = sum(r["tokens"] for r in ok)
    return {"wall_s": wall, "failed": len(failed), "first_error": failed[0]["error"] if failed else "",
            "tokens": tokens, "aggregate_tps": tokens / wall,
            "ttft_p50_ms": percentile([r["ttft_s"] * 1000 for r in ok], 50),
            "ttft_p95_ms": percentile([r["ttft_s"] * 1000 for r in ok], 95)}


def start_servers(threads):
    sp_port, ll_port = free_port(), free_port()
    spore = subprocess.Popen([os.path.join(ROOT, "build/release/bin/spore"), "serve", "--model", GGUF, "--port",
                              str(sp_port), "--slots", "16", "--queue", "16", "--ctx", "512", "--threads", str(threads)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    llama = subprocess.Popen([os.path.join(ROOT, ".venv-peers/bin/python"), "-m", "llama_cpp.server", "--model", GGUF,
                              "--port", str(ll_port), "--n_threads", str(threads), "--n_threads_batch", str(threads),
                              "--n_ctx", "2048", "--verbose", "False",
                              # By default a new request interrupts the running one (its stream
                              # ends early); queue them instead, as a server under load must.
                              "--interrupt_requests", "False"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return {"spore": (spore, sp_port), "llama-cpp-python": (llama, ll_port)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", default="1,4,16")
    ap.add_argument("--write", action="store_true", help="write the table into bench/README.md")
    a = ap.parse_args()
    if not os.path.exists(GGUF):
        print("serve_bench: skipped: no %s (scripts/fetch-model.sh)" % GGUF)
        return 0
    streams = [int(s) for s in a.streams.split(",")]
    servers = start_servers(a.threads)
    try:
        for name, (p, port) in servers.items():
            # llama-cpp-python's server has no /health; its model list answers once it is up.
            if not wait_healthy(port, p, 180, "/health" if name == "spore" else "/v1/models"):
                print("serve_bench: %s did not start" % name)
                return 1
        # One request each first: page in the weights, JIT and caches outside the measurement.
        for name, (p, port) in servers.items():
            stream_chat("127.0.0.1", port, PROMPT % 999, 8, timeout=600, require_usage=False)
        loads = []
        runs = {(n, s): [] for n in servers for s in streams}
        for rnd in range(a.rounds):
            order = list(servers) if rnd % 2 == 0 else list(reversed(list(servers)))
            for s in streams:
                for name in order:
                    r = cell(servers[name][1], s, max(4, 2 * s), a.max_tokens, require_usage=(name == "spore"))
                    runs[(name, s)].append(r)
                    loads.append(float(open("/proc/loadavg").read().split()[0]))
                    print("round %d  %-17s %2d streams: %6.1f tokens/s aggregate, first token p50 %7.0f ms "
                          "p95 %7.0f ms, %d failed %s" % (rnd + 1, name, s, r["aggregate_tps"], r["ttft_p50_ms"],
                                                           r["ttft_p95_ms"], r["failed"], r["first_error"]), flush=True)
    finally:
        for p, _ in servers.values():
            p.terminate()
        for p, _ in servers.values():
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()

    def med(name, s, key):
        return statistics.median(r[key] for r in runs[(name, s)])

    rows = []
    for s in streams:
        sp, ll = med("spore", s, "aggregate_tps"), med("llama-cpp-python", s, "aggregate_tps")
        rows.append((s, sp, ll, sp / ll if ll else float("nan"), med("spore", s, "ttft_p50_ms"), med("spore", s, "ttft_p95_ms"),
                     med("llama-cpp-python", s, "ttft_p50_ms"), med("llama-cpp-python", s, "ttft_p95_ms")))
    failed = sum(r["failed"] for v in runs.values() for r in v)
    scale = rows[-1][1] / rows[0][1] if rows and rows[0][1] else float("nan")
    peer_scale = rows[-1][2] / rows[0][2] if rows and rows[0][2] else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    lines = [BEGIN, "## spore serve vs llama-cpp-python's server (issue 13), %s" % now, "",
             "Machine: %d vCPU %s; load average during the run %.1f-%.1f (the machine is shared: only the "
             "same-run ratios compare). Model: SmolLM2-135M-Instruct Q4_1 GGUF, the same file for both. "
             "Both servers up at once with %d threads each; spore serve `--slots 16 --ctx 512`, "
             "`python -m llama_cpp.server --n_ctx 2048 --interrupt_requests False` (llama-cpp-python %s; it "
             "serves one request at a time). Load: streamed chat "
             "completions, temperature 0, max_tokens %d, max(4, 2 x streams) requests per cell, %d interleaved "
             "rounds (server order alternating); medians over rounds. %d failed requests."
             % (os.cpu_count(), cpu, min(loads), max(loads), a.threads, peer_version(), a.max_tokens, a.rounds, failed),
             "", "| streams | spore tokens/s | llama-cpp-python tokens/s | ratio | spore TTFT p50 / p95 (ms) | "
             "llama-cpp-python TTFT p50 / p95 (ms) |", "|---|---|---|---|---|---|"]
    for s, sp, ll, ratio, sp50, sp95, ll50, ll95 in rows:
        lines.append("| %d | %.1f | %.1f | %.2fx | %.0f / %.0f | %.0f / %.0f |" % (s, sp, ll, ratio, sp50, sp95, ll50, ll95))
    lines += ["", "Scaling (aggregate tokens/s at %d streams over 1): spore %.2fx, llama-cpp-python %.2fx. "
              "Targets: ratio >= 1.0x at every concurrency; spore's scaling >= 3x." % (streams[-1], scale, peer_scale),
              "", "Command: `python3 bench/serve_bench.py --rounds %d --max-tokens %d --threads %d --write`"
              % (a.rounds, a.max_tokens, a.threads), END]
    table = "\n".join(lines) + "\n"
    print()
    print(table)
    os.makedirs(os.path.join(ROOT, "outputs"), exist_ok=True)
    with open(os.path.join(ROOT, "outputs", "serve_bench.json"), "w") as f:
        json.dump({"runs": {"%s/%d" % k: v for k, v in runs.items()}, "rows": rows, "loads": loads}, f, indent=1)
    if a.write:
        path = os.path.join(ROOT, "bench", "README.md")
        text = open(path).read()
        if BEGIN in text:
            text = text[:text.index(BEGIN)] + table.rstrip("\n") + text[text.index(END) + len(END):]
        else:
            text = text.rstrip("\n") + "\n\n" + table
        open(path, "w").write(text)
    return 0 if failed == 0 else 1


def peer_version():
    try:
        out = subprocess.run([os.path.join(ROOT, ".venv-peers/bin/python"), "-c", "import llama_cpp; print(llama_cpp.__version__)"],
                             capture_output=True, text=True, timeout=60)
        return out.stdout.strip() or "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


if __name__ == "__main__":
    sys.exit(main())
