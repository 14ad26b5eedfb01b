#!/usr/bin/env python3
"""Chat-template render time, Spore vs jinja2 as transformers uses it (issue 11), same run.

usage: /work/main/.venv-peers/bin/python bench/template_bench.py [--build build/release] [--rounds 7]

The input: a 20-turn conversation (system prompt, 20 user and 20 assistant messages, two tool
calls with their replies, reasoning_content on the last two turns), two tool definitions and
enable_thinking=False, through the Qwen3 template (tests/fixtures/templates/qwen3-0.6b).

Spore: build/<preset>/bench/template_bench (Google Benchmark), JSON messages in, prompt out.
Peer: transformers' own path of apply_chat_template(tokenize=False) without a tokenizer object:
_normalize_chat_messages + render_jinja_template (its compiled jinja2 template is cached, as in
transformers), timed in-process with perf_counter. Rounds alternate Spore and the peer; the
table takes the median of each. Before timing, `spore template` renders the same input once and
must equal the peer's text byte for byte, so both sides do the same work.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEMPLATE_DIR = os.path.join(ROOT, "tests", "fixtures", "templates", "qwen3-0.6b")


def conversation():
    msgs = [{"role": "system", "content": "You are a helpful assistant that answers briefly."}]
    for i in range(20):
        msgs.append({"role": "user", "content": f"Question number {i}: what is the weather like in city {i}, "
                                                "and should I bring an umbrella?"})
        if i in (7, 13):
            msgs.append({"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                "name": "get_weather", "arguments": {"city": f"City {i}", "unit": "celsius"}}}]})
            msgs.append({"role": "tool", "content": "{\"temperature\": 21, \"rain\": 0.4}"})
        answer = {"role": "assistant",
                  "content": f"In city {i} it is 21 degrees with a 40% chance of rain, so yes, bring an umbrella."}
        if i >= 18:
            answer["reasoning_content"] = "The tool said 40% rain; recommend an umbrella."
        msgs.append(answer)
    tools = [
        {"type": "function", "function": {"name": "get_weather", "description": "Get the weather in a city",
                                          "parameters": {"type": "object", "properties": {
                                              "city": {"type": "string", "description": "City name"},
                                              "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                                              "required": ["city"]}}},
        {"type": "function", "function": {"name": "search", "description": "Search the web",
                                          "parameters": {"type": "object",
                                                         "properties": {"query": {"type": "string"}},
                                                         "required": ["query"]}}},
    ]
    return msgs, {"enable_thinking": False, "tools": tools}


def peer_renderer(messages, kwargs):
    from transformers.utils import chat_template_utils as ctu
    cfg = json.load(open(os.path.join(TEMPLATE_DIR, "tokenizer_config.json"), encoding="utf-8"))
    tokens = {k: cfg[k] for k in ("bos_token", "eos_token", "unk_token", "pad_token") if cfg.get(k) is not None}
    kw = dict(kwargs)
    tools = kw.pop("tools")

    def render():
        chat = ctu._normalize_chat_messages(messages)
        out, _ = ctu.render_jinja_template(conversations=[chat], tools=tools, chat_template=cfg["chat_template"],
                                           add_generation_prompt=True, **{**tokens, **kw})
        return out[0]
    return render


def time_peer(render, seconds=1.0):
    render()
    n, start = 0, time.perf_counter()
    samples = []
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        render()
        samples.append(time.perf_counter() - t0)
        n += 1
    return statistics.median(samples) * 1e6


def time_spore(binary, env):
    out = subprocess.run([binary, "--benchmark_format=json", "--benchmark_min_time=1"], env=env,
                         capture_output=True, text=True, check=True).stdout
    rows = json.loads(out)["benchmarks"]
    return rows[0]["real_time"]  # microseconds (the benchmark's unit)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    binary = os.path.join(args.build, "bench", "template_bench")
    cli = os.path.join(args.build, "bin", "spore")
    messages, kwargs = conversation()
    render = peer_renderer(messages, kwargs)
    expected = render()
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "input.json")
        json.dump({"messages": messages, "kwargs": kwargs}, open(inp, "w", encoding="utf-8"), ensure_ascii=False)
        msg_file = os.path.join(tmp, "messages.json")
        json.dump(messages, open(msg_file, "w", encoding="utf-8"), ensure_ascii=False)
        got = subprocess.run([cli, "template", TEMPLATE_DIR, "--messages", msg_file, "--add-generation-prompt",
                              "--kwargs", json.dumps(kwargs)], capture_output=True, check=True).stdout.decode()
        if got != expected:
            sys.exit("spore template and transformers disagree on the benchmark input; fix that first")
        env = dict(os.environ, SPORE_TEMPLATE_BENCH_INPUT=inp)
        spore, peer = [], []
        for _ in range(args.rounds):
            spore.append(time_spore(binary, env))
            peer.append(time_peer(render))
    s, p = statistics.median(spore), statistics.median(peer)
    print(f"prompt: {len(expected)} chars, {len(messages)} messages; rounds: {args.rounds}")
    print(f"spore  median {s:9.1f} us  (rounds: {', '.join(f'{x:.1f}' for x in spore)})")
    print(f"jinja2 median {p:9.1f} us  (rounds: {', '.join(f'{x:.1f}' for x in peer)})")
    print(f"ratio jinja2/spore: {p / s:.1f}x")


if __name__ == "__main__":
    main()
