#!/usr/bin/env python3
"""The bounded load test of `spore serve` (issue 13, NOTE [Machine gate]).

Starts `spore serve` with the embedded default model (models/smollm2-135m-instruct) on a free
loopback port, drives CLIENTS concurrent streaming chat clients (each sends its next request as soon as the
last one ends) through a warm-up (until every client has had an answer) and then DURATION
seconds more, and asserts:
  - zero failed requests: every answer is 200, text/event-stream, JSON chunks, usage, [DONE];
  - resident memory flat after warm-up: VmRSS from /proc/PID/status, sampled every second, stays
    within 5% (max over min) after the warm-up.
Python's standard library only, so CI needs nothing installed. Exit status: 0 pass, 1 fail,
77 skipped (no model file; ctest's SKIP_RETURN_CODE).

  python3 tools/serve_load_test.py --spore build/release/bin/spore [--clients 32] [--duration 30]
"""
import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stream_chat(host, port, prompt, max_tokens, timeout=120.0, model=None, require_usage=True):
    """One streamed chat completion. Returns a dict: ok, error, ttft_s, total_s, tokens (from the
    usage chunk; without one, and require_usage False, the number of content chunks)."""
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    if model:
        body["model"] = model
    t0 = time.perf_counter()
    out = {"ok": False, "error": "", "ttft_s": None, "total_s": None, "tokens": 0, "chunks": 0}
    try:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            out["error"] = "status %d: %s" % (r.status, r.read(200))
            return out
        if not r.getheader("Content-Type", "").startswith("text/event-stream"):
            out["error"] = "Content-Type %r" % r.getheader("Content-Type")
            return out
        done = usage = False
        while True:
            line = r.readline()
            if not line:
                break
            line = line.rstrip(b"\r\n")
            if not line or line.startswith(b":"):
                continue
            if not line.startswith(b"data: "):
                out["error"] = "not an SSE data line: %r" % line[:80]
                return out
            data = line[6:]
            if data == b"[DONE]":
                # The end for a client, as for OpenAI's: a server that holds the connection open
                # after it (llama-cpp-python's, for seconds) is not charged for the wait.
                done = True
                break
            chunk = json.loads(data)
            if chunk.get("usage"):
                usage = True
                out["tokens"] = chunk["usage"]["completion_tokens"]
            for c in chunk.get("choices", []):
                if c.get("delta", {}).get("content"):
                    out["chunks"] += 1
                    if out["ttft_s"] is None:
                        out["ttft_s"] = time.perf_counter() - t0
        conn.close()
        out["total_s"] = time.perf_counter() - t0
        if not done:
            out["error"] = "no data: [DONE]"
        elif not usage and require_usage:
            out["error"] = "no usage chunk"
        elif out["ttft_s"] is None:
            out["error"] = "no content"
        else:
            out["ok"] = True
            if not usage:
                out["tokens"] = out["chunks"]
    except (OSError, ValueError, http.client.HTTPException) as e:
        out["error"] = "%s: %s" % (type(e).__name__, e)
    return out


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_healthy(port, proc, limit_s=120, path="/health"):
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if proc.poll() is not None:
            return False
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def have_model():
    d = os.path.join(ROOT, "models", "smollm2-135m-instruct")
    return os.path.isdir(d) and any(n.endswith(".gguf") for n in os.listdir(d))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(ROOT, "build/release/bin/spore"))
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--warmup", type=float, default=5.0, help="least seconds before memory must be flat")
    ap.add_argument("--warmup-limit", type=float, default=120.0, help="most seconds for every client's first answer")
    ap.add_argument("--max-tokens", type=int, default=16)
    ap.add_argument("--slots", type=int, default=16)
    ap.add_argument("--tolerance", type=float, default=0.05)
    a = ap.parse_args()
    if not have_model():
        print("serve_load_test: skipped: no model at models/smollm2-135m-instruct (scripts/fetch-model.sh fetches it)")
        return 77
    port = free_port()
    # Every client holds one request at a time: slots + queue covers them all, so a 503 is a failure.
    cmd = [a.spore, "serve", "--port", str(port), "--slots", str(a.slots), "--queue", str(a.clients),
           "--ctx", "512"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        if not wait_healthy(port, proc):
            print("serve_load_test: FAIL: spore serve did not become healthy:", proc.stderr.read1(2000) if proc.poll() is not None else "")
            return 1
        results, lock = [], threading.Lock()
        first_done = {}  # client -> seconds since start when its first request ended
        stop = {"at": None}  # set once warm: then DURATION more seconds

        def client(i):
            n = 0
            while stop["at"] is None or time.time() < stop["at"]:
                r = stream_chat("127.0.0.1", port, "Client %d, request %d: name a fruit." % (i, n), a.max_tokens)
                n += 1
                with lock:
                    results.append(r)
                    first_done.setdefault(i, time.time() - t0)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(a.clients)]
        t0 = time.time()
        for t in threads:
            t.start()
        # Warm-up ends when every client has had an answer (each server thread that will serve has
        # allocated what it keeps, malloc's per-thread arenas included), and not before --warmup;
        # the measured DURATION seconds follow. A warm-up past --warmup-limit stops the test.
        warm = None
        samples = []  # (seconds since start, VmRSS KiB)
        while any(t.is_alive() for t in threads):
            now = time.time() - t0
            samples.append((now, rss_kib(proc.pid)))
            if warm is None and ((len(first_done) == a.clients and now >= a.warmup) or now > a.warmup_limit):
                warm = now
                stop["at"] = time.time() + (a.duration if len(first_done) == a.clients else 0)
            time.sleep(1.0)
        for t in threads:
            t.join()
        wall = time.time() - t0
        failed = [r for r in results if not r["ok"]]
        warm = warm if warm is not None else time.time() - t0
        after = [kib for s, kib in samples if s >= warm]
        lo, hi = (min(after), max(after)) if after else (0, 0)
        growth = (hi - lo) / lo if lo else float("inf")
        tokens = sum(r["tokens"] for r in results if r["ok"])
        ttfts = sorted(r["ttft_s"] for r in results if r["ok"])
        p50 = ttfts[len(ttfts) // 2] * 1000 if ttfts else float("nan")
        print("serve_load_test: %d clients for %.0f s (%.0f s of warm-up): %d requests, %d failed, %d tokens (%.1f tokens/s), "
              "first token p50 %.0f ms" % (a.clients, wall, warm, len(results), len(failed), tokens, tokens / wall, p50))
        print("serve_load_test: VmRSS after %.0f s of warm-up: min %.1f MiB, max %.1f MiB (%+.1f%%, limit %.0f%%); "
              "at start %.1f MiB; load %s" % (warm, lo / 1024, hi / 1024, growth * 100, a.tolerance * 100,
                                               samples[0][1] / 1024 if samples else 0, open("/proc/loadavg").read().split()[0]))
        ok = True
        if not results:
            print("serve_load_test: FAIL: no request completed")
            ok = False
        if failed:
            print("serve_load_test: FAIL: %d failed requests; first: %s" % (len(failed), failed[0]["error"]))
            ok = False
        if len(first_done) < a.clients:
            print("serve_load_test: FAIL: only %d of %d clients had an answer in %.0f s" % (len(first_done), a.clients, warm))
            ok = False
        elif len(after) < 3:
            print("serve_load_test: FAIL: too few memory samples after warm-up (%d): the clients' first answers took %.0f s"
              % (len(after), warm))
            ok = False
        elif growth > a.tolerance:
            print("serve_load_test: FAIL: resident memory grew %.1f%% after warm-up" % (growth * 100))
            ok = False
        if proc.poll() is not None:
            print("serve_load_test: FAIL: spore serve exited with %d" % proc.returncode)
            ok = False
        print("serve_load_test:", "PASS" if ok else "FAIL")
        return 0 if ok else 1
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


if __name__ == "__main__":
    sys.exit(main())
