#!/usr/bin/env python3
"""spore serve against llama.cpp's own C++ llama-server on the same GGUF (issues 13 and 28).

Both servers run at once on free loopback ports, each with the same threads, 16 slots and the same
context per slot (512 tokens), continuous batching on both; the load is the
same for both: streamed chat completions (temperature 0, MAX_TOKENS each) at 1, 4 and 16
concurrent streams, REQUESTS = max(4, 2 x streams) per cell (each stream sends its next
request as soon as one ends), in interleaved rounds (each round runs
every cell on both servers, the server order alternating) so the machine's swings fall on both.
Per cell: aggregate decode tokens/s (completion tokens of all requests / the cell's wall time),
time to first token p50/p95; the table gives medians over rounds and the ratio spore / peer, and
spore's scaling (aggregate at 16 streams / at 1). With --write, the table replaces the section
between the markers in bench/README.md.

  python3 bench/serve_bench.py [--rounds 3] [--max-tokens 64] [--threads 2] [--isa native|avx2] [--write]

The peer is `llama-server`, built from the llama.cpp sources of llama-cpp-python's sdist for the
ISA level asked (tools/llama_cpp_sdist.py: native, or AVX2 without AVX-512 while Spore runs with
SPORE_CPU_ISA=avx2), never linked into Spore; OPENBLAS_CORETYPE is unset for it only and both run
with OMP_WAIT_POLICY=passive.
"""
import argparse
import datetime
import glob
import json
import os
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from llama_cpp_sdist import llama_tool  # noqa: E402
from serve_load_test import free_port, stream_chat, wait_healthy  # noqa: E402

GGUF = os.path.join(ROOT, "models", "smollm2-135m-instruct", "SmolLM2-135M-Instruct.Q4_1.gguf")
PEER = "llama-server"
SLOTS, CTX_PER_SLOT = 16, 512
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


def start_servers(threads, isa):
    sp_port, ll_port = free_port(), free_port()
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    if isa == "avx2":
        env["SPORE_CPU_ISA"] = "avx2"
    spore = subprocess.Popen([os.path.join(ROOT, "build/release/bin/spore"), "serve", "--model", GGUF, "--port",
                              str(sp_port), "--slots", str(SLOTS), "--queue", "64", "--ctx", str(CTX_PER_SLOT),
                              "--threads", str(threads)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    env = dict(os.environ, OMP_WAIT_POLICY="passive")
    env.pop("OPENBLAS_CORETYPE", None)
    pip = os.path.join(ROOT, ".venv-peers", "bin", "pip")
    exe = llama_tool(os.path.join(ROOT, "build", "peers"), [pip if os.path.exists(pip) else "pip"], "llama-server", isa,
                     env=env)
    # -c is the whole cache, shared by the slots: 16 x 512 gives each slot Spore's context.
    llama = subprocess.Popen([exe, "-m", GGUF, "--host", "127.0.0.1", "--port", str(ll_port), "-t", str(threads),
                              "-tb", str(threads), "-np", str(SLOTS), "-c", str(SLOTS * CTX_PER_SLOT), "-cb"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return {"spore": (spore, sp_port), PEER: (llama, ll_port)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--isa", choices=["native", "avx2"], default="native")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--streams", default="1,4,16")
    ap.add_argument("--write", action="store_true", help="write the table into bench/README.md")
    a = ap.parse_args()
    if not os.path.exists(GGUF):
        print("serve_bench: skipped: no %s (scripts/fetch-model.sh)" % GGUF)
        return 0
    streams = [int(s) for s in a.streams.split(",")]
    begin, end = f"<!-- serve_bench-{a.isa}:begin -->", f"<!-- serve_bench-{a.isa}:end -->"
    servers = start_servers(a.threads, a.isa)
    try:
        for name, (p, port) in servers.items():
            if not wait_healthy(port, p, 600, "/health"):
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
        sp, ll = med("spore", s, "aggregate_tps"), med(PEER, s, "aggregate_tps")
        rows.append((s, sp, ll, sp / ll if ll else float("nan"), med("spore", s, "ttft_p50_ms"), med("spore", s, "ttft_p95_ms"),
                     med(PEER, s, "ttft_p50_ms"), med(PEER, s, "ttft_p95_ms")))
    failed = sum(r["failed"] for v in runs.values() for r in v)
    scale = rows[-1][1] / rows[0][1] if rows and rows[0][1] else float("nan")
    peer_scale = rows[-1][2] / rows[0][2] if rows and rows[0][2] else float("nan")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    level = "AVX2 level (Spore SPORE_CPU_ISA=avx2; llama-server built without AVX-512)" if a.isa == "avx2" \
        else "native level (both built for this CPU)"
    lines = [begin, "Machine: %d vCPU %s, %s; %s; load average during the run %.1f-%.1f (only the same-run "
             "ratios compare). Model: SmolLM2-135M-Instruct Q4_1 GGUF, the same file for both. Both servers up at "
             "once with %d threads each, %d slots of %d tokens: `spore serve --slots %d --ctx %d`, `llama-server "
             "-np %d -c %d -cb` (llama.cpp of llama-cpp-python %s's sdist). Load: streamed chat completions, "
             "temperature 0, max_tokens %d, max(4, 2 x streams) requests per cell, %d interleaved rounds (server "
             "order alternating); medians over rounds. %d failed requests."
             % (os.cpu_count(), cpu, level, now, min(loads), max(loads), a.threads, SLOTS, CTX_PER_SLOT, SLOTS,
                CTX_PER_SLOT, SLOTS, SLOTS * CTX_PER_SLOT, peer_version(), a.max_tokens, a.rounds, failed),
             "", "| streams | spore tokens/s | llama-server tokens/s | ratio | spore TTFT p50 / p95 (ms) | "
             "llama-server TTFT p50 / p95 (ms) |", "|---|---|---|---|---|---|"]
    for s, sp, ll, ratio, sp50, sp95, ll50, ll95 in rows:
        lines.append("| %d | %.1f | %.1f | %.2fx | %.0f / %.0f | %.0f / %.0f |" % (s, sp, ll, ratio, sp50, sp95, ll50, ll95))
    lines += ["", "Scaling (aggregate tokens/s at %d streams over 1): spore %.2fx, llama-server %.2fx. "
              "Targets (issue 28): ratio >= 1.3x at every concurrency; spore's scaling >= 3x; spore's first-token "
              "p50 not above llama-server's." % (streams[-1], scale, peer_scale),
              "", "Command: `python3 bench/serve_bench.py --rounds %d --max-tokens %d --threads %d --isa %s --write`"
              % (a.rounds, a.max_tokens, a.threads, a.isa), end]
    table = "\n".join(lines) + "\n"
    print()
    print(table)
    os.makedirs(os.path.join(ROOT, "outputs"), exist_ok=True)
    with open(os.path.join(ROOT, "outputs", f"serve_bench-{a.isa}.json"), "w") as f:
        json.dump({"runs": {"%s/%d" % k: v for k, v in runs.items()}, "rows": rows, "loads": loads}, f, indent=1)
    if a.write:
        path = os.path.join(ROOT, "bench", "README.md")
        text = open(path).read()
        if begin in text:
            text = text[:text.index(begin)] + table.rstrip("\n") + text[text.index(end) + len(end):]
        else:
            text = text.rstrip("\n") + "\n\n" + table
        open(path, "w").write(text)
    return 0 if failed == 0 else 1


def peer_version():
    tars = sorted(glob.glob(os.path.join(ROOT, "build", "peers", "llama_cpp_python-*.tar.gz")))
    return os.path.basename(tars[-1])[len("llama_cpp_python-"):-len(".tar.gz")] if tars else "?"


if __name__ == "__main__":
    sys.exit(main())
