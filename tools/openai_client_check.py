#!/usr/bin/env python3
"""The official `openai` Python client against `spore serve`, unchanged: models, chat and
completions, JSON and streaming (with usage), tools passed through, seeds, and error mapping.

Rerun:  /work/main/.venv-peers/bin/pip install openai   (once)
        /work/main/.venv-peers/bin/python tools/openai_client_check.py [--spore build/release/bin/spore]
                                                                        [--url http://127.0.0.1:8080/v1 --api-key K]
Without --url it starts `spore serve` on a free loopback port with an API key and stops it after.
Exit status 0 when every check passes; each check prints one line.
"""
import argparse
import os
import socket
import subprocess
import sys
import time
import urllib.request

import openai

failures = []


def check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(base, seconds=120):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if r.status == 200:
                    return True
        except Exception:
            time.sleep(0.2)
    return False


def run_checks(client):
    models = client.models.list()
    model = models.data[0].id
    check("models.list", len(models.data) == 1 and models.data[0].object == "model", model)

    msgs = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
    r = client.chat.completions.create(model=model, messages=msgs, max_tokens=12, temperature=0)
    text = r.choices[0].message.content
    check("chat.completions JSON", r.object == "chat.completion" and isinstance(text, str) and len(text) > 0
          and r.usage.completion_tokens > 0 and r.choices[0].finish_reason in ("stop", "length"), repr(text))

    stream = client.chat.completions.create(model=model, messages=msgs, max_tokens=12, temperature=0, stream=True,
                                            stream_options={"include_usage": True})
    pieces, usage, finish = [], None, None
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for c in chunk.choices:
            if c.delta.content:
                pieces.append(c.delta.content)
            if c.finish_reason:
                finish = c.finish_reason
    check("chat.completions stream", "".join(pieces) == text and usage is not None
          and usage.completion_tokens == r.usage.completion_tokens and finish == r.choices[0].finish_reason,
          f"{len(pieces)} deltas, usage {usage}")

    a = client.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=1.0, seed=99)
    b = client.chat.completions.create(model=model, messages=msgs, max_tokens=10, temperature=1.0, seed=99)
    check("seed reproduces", a.choices[0].message.content == b.choices[0].message.content)

    tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                               "parameters": {"type": "object",
                                                              "properties": {"city": {"type": "string"}}}}}]
    t = client.chat.completions.create(model=model, messages=msgs, max_tokens=8, temperature=0, tools=tools)
    check("chat with tools accepted", t.choices[0].message.role == "assistant")
    ts = client.chat.completions.create(model=model, messages=msgs, max_tokens=8, temperature=0, tools=tools,
                                        stream=True)
    content, calls = "", []
    for chunk in ts:
        for c in chunk.choices:
            content += c.delta.content or ""
            calls += c.delta.tool_calls or []
    check("chat with tools streamed", content == (t.choices[0].message.content or "")
          and len(calls) == len(t.choices[0].message.tool_calls or []), repr(content))

    lp = client.chat.completions.create(model=model, messages=msgs, max_tokens=4, temperature=0, logprobs=True,
                                        top_logprobs=2)
    content = lp.choices[0].logprobs.content
    check("logprobs", len(content) == lp.usage.completion_tokens and all(len(x.top_logprobs) == 2 for x in content))

    c = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8, temperature=0)
    check("completions JSON", c.object == "text_completion" and len(c.choices[0].text) > 0, repr(c.choices[0].text))
    s = client.completions.create(model=model, prompt="The capital of France is", max_tokens=8, temperature=0,
                                  stream=True)
    streamed = "".join(ch.choices[0].text for ch in s if ch.choices)
    check("completions stream", streamed == c.choices[0].text, repr(streamed))

    try:
        client.chat.completions.create(model=model, messages=msgs, temperature=5)
        check("400 maps to BadRequestError", False, "no error")
    except openai.BadRequestError as e:
        check("400 maps to BadRequestError", e.status_code == 400 and "temperature" in str(e))
    try:
        client.chat.completions.create(model="no-such-model", messages=msgs)
        check("unknown model is an error", False, "no error")
    except openai.BadRequestError as e:
        check("unknown model is an error", "model" in str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spore", default=os.path.join(os.path.dirname(__file__), "..", "build", "release", "bin", "spore"))
    ap.add_argument("--model", default="", help="model for spore serve (default: the embedded one)")
    ap.add_argument("--url", default="", help="an already running server's /v1 base URL")
    ap.add_argument("--api-key", default="check-key")
    args = ap.parse_args()
    server = None
    base = args.url.rstrip("/")
    if not base:
        port = free_port()
        cmd = [args.spore, "serve", "--port", str(port), "--api-key", args.api_key, "--slots", "2", "--ctx", "1024"]
        if args.model:
            cmd += ["--model", args.model]
        server = subprocess.Popen(cmd)
        base = f"http://127.0.0.1:{port}/v1"
    try:
        if not wait_healthy(base[: -len("/v1")] if base.endswith("/v1") else base):
            print("FAIL the server did not become healthy")
            return 1
        client = openai.OpenAI(base_url=base, api_key=args.api_key, max_retries=0, timeout=120)
        try:
            openai.OpenAI(base_url=base, api_key="wrong", max_retries=0).models.list()
            check("wrong key is 401", False, "no error")
        except openai.AuthenticationError:
            check("wrong key is 401", True)
        run_checks(client)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
    print(f"{'all checks passed' if not failures else str(len(failures)) + ' failed: ' + ', '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
