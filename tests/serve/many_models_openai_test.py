#!/usr/bin/env python3
"""The `openai` Python client against `spore serve --models DIR` (NOTE [Many models]) on tiny
fixtures: two decoders with chat templates (tests/fixtures/serve, tools/make_serve_fixtures.py),
the BERT embedding fixture (tests/fixtures/embed/bert) and a broken GGUF
(tests/fixtures/llm/bad/missing_tensor.gguf), linked into a temporary folder.

- models.list() lists all four by name, unloaded at first;
- chat (JSON and streamed) and completions reach the model the request names: each answer equals
  what a `spore serve --model FILE` of that model alone answers (greedy), and the two models'
  answers are told apart;
- embeddings from the BERT fixture equal transformers' mean-pooled vectors (reference.json);
- an unknown model, and names that look like paths (../x, /abs/x.gguf, x.gguf, a/../b) are 404
  model_not_found, and never load a file outside the folder (a model sits beside it);
- the broken file answers 500 naming the file, and the others keep serving;
- a request that names no model is a 400 when several are served;
- under --max-memory (set from the sizes /v1/models reports) the least recently used model is
  unloaded when the next one loads, and a model larger than the limit alone is 507 while the
  loaded one stays loaded and serving.

Usage: many_models_openai_test.py SPORE_BINARY SOURCE_DIR
Re-runs itself under the peers' Python when this one lacks `openai`; 77 (skipped) when none has it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
import peers_python  # noqa: E402

peers_python.require("openai")
import openai  # noqa: E402
import openai_client_check as occ  # noqa: E402

failures = occ.failures


def check(name, ok, detail=""):
    occ.check(name, ok, str(detail) if detail != "" else "")


def start(spore, args):
    port = occ.free_port()
    proc = subprocess.Popen([spore, "serve", "--port", str(port), "--host", "127.0.0.1", "--slots", "2", "--threads", "2"]
                            + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    if occ.wait_healthy(base, 60):
        return proc, base
    proc.kill()
    raise SystemExit("spore serve did not become healthy: " + proc.stderr.read().decode(errors="replace"))


def stop(proc):
    proc.terminate()
    proc.wait(timeout=20)


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def states(client):
    return {m.id: (m.model_extra or {}).get("status", {}) for m in client.models.list().data}


CHAT = [{"role": "user", "content": "hi"}]


def chat(client, model, **kw):
    r = client.chat.completions.create(model=model, messages=CHAT, max_tokens=6, temperature=0, **kw)
    return r


def alone_answers(spore, path):
    """Greedy chat and completion answers of a server holding this model alone (the reference)."""
    proc, base = start(spore, ["--model", path])
    try:
        c = openai.OpenAI(base_url=base + "/v1", api_key="unused")
        name = c.models.list().data[0].id
        return (chat(c, name).choices[0].message.content,
                c.completions.create(model=name, prompt="ab", max_tokens=6, temperature=0).choices[0].text)
    finally:
        stop(proc)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    spore, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    fixtures = os.path.join(src, "tests", "fixtures")
    work = tempfile.mkdtemp(prefix="spore_many_models_")
    try:
        models = os.path.join(work, "models")
        os.makedirs(models)
        llama = os.path.join(fixtures, "serve", "tiny-llama.gguf")
        qwen = os.path.join(fixtures, "serve", "tiny-qwen2.gguf")
        os.symlink(llama, os.path.join(models, "tiny-llama.gguf"))
        os.symlink(qwen, os.path.join(models, "tiny-qwen2.gguf"))
        os.symlink(os.path.join(fixtures, "embed", "bert"), os.path.join(models, "bert"))
        shutil.copy(os.path.join(fixtures, "llm", "bad", "missing_tensor.gguf"), os.path.join(models, "broken.gguf"))
        outside = os.path.join(work, "outside.gguf")  # a real model beside the folder, not in it
        shutil.copy(llama, outside)

        want = {"tiny-llama": alone_answers(spore, llama), "tiny-qwen2": alone_answers(spore, qwen)}
        check("the two fixtures answer differently (so routing is visible)", want["tiny-llama"] != want["tiny-qwen2"], want)

        proc, base = start(spore, ["--models", models])
        try:
            client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
            st = states(client)
            check("models.list() lists every model by name", sorted(st) == ["bert", "broken", "tiny-llama", "tiny-qwen2"], st)
            check("nothing is loaded before its first request", all(s.get("state") == "unloaded" for s in st.values()), st)
            for name in ("tiny-llama", "tiny-qwen2"):
                r = chat(client, name)
                check(f"{name}: chat answers as the model alone", r.choices[0].message.content == want[name][0]
                      and r.model == name, (r.choices[0].message.content, want[name][0]))
                text = "".join((c.choices[0].delta.content or "") for c in
                               chat(client, name, stream=True) if c.choices)
                check(f"{name}: streamed chat is the same text", text == want[name][0], (text, want[name][0]))
                comp = client.completions.create(model=name, prompt="ab", max_tokens=6, temperature=0)
                check(f"{name}: completion answers as the model alone", comp.choices[0].text == want[name][1])
            ref = json.load(open(os.path.join(fixtures, "embed", "bert", "reference.json"), encoding="utf-8"))
            e = client.embeddings.create(model="bert", input=ref["texts"][0]["text"])
            check("bert: transformers' mean-pooled vector", len(e.data[0].embedding) == len(ref["texts"][0]["mean"]) and all(
                abs(a - b) < 1e-4 for a, b in zip(e.data[0].embedding, ref["texts"][0]["mean"])))
            st = states(client)
            check("used models are loaded, with their bytes", all(st[n].get("state") == "loaded" and st[n].get("bytes", 0) > 0
                                                                 for n in ("tiny-llama", "tiny-qwen2", "bert")), st)
            for name in ("no-such-model", "../outside", outside, "outside.gguf", "tiny-llama.gguf",
                         "bert/../tiny-llama", "./tiny-qwen2", "tiny-llama/"):
                try:
                    chat(client, name)
                    check(f"'{name}' is a 404", False, "no error")
                except openai.NotFoundError as err:
                    check(f"'{name}' is a 404 model_not_found", err.status_code == 404 and
                          isinstance(err.body, dict) and err.body.get("code") == "model_not_found", err.body)
            check("no request loaded anything else", sorted(states(client)) == ["bert", "broken", "tiny-llama", "tiny-qwen2"])
            try:
                chat(client, "broken")
                check("a broken file is an error", False, "no error")
            except openai.InternalServerError as err:
                msg = str(err.body.get("message", "")) if isinstance(err.body, dict) else str(err)
                check("a broken file is a 500 naming the file", err.status_code == 500 and "broken.gguf" in msg and
                      err.body.get("code") == "model_load_failed", err.body)
            check("the others keep serving after it", chat(client, "tiny-llama").choices[0].message.content == want["tiny-llama"][0])
            status, body = post(base, "/v1/chat/completions", {"messages": CHAT, "max_tokens": 2})
            check("no model named, several served: 400", status == 400 and body["error"]["param"] == "model", body)
            sizes = {n: st[n]["bytes"] for n in ("tiny-llama", "tiny-qwen2")}
        finally:
            stop(proc)

        # Room for the larger of the two, not both: each load unloads the other (idle) one.
        limit = max(sizes.values()) + min(sizes.values()) // 2
        proc, base = start(spore, ["--models", models, "--max-memory", str(limit)])
        try:
            client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
            chat(client, "tiny-llama")
            chat(client, "tiny-qwen2")
            st = states(client)
            check("under --max-memory the least recently used is unloaded",
                  st["tiny-llama"]["state"] == "unloaded" and st["tiny-qwen2"]["state"] == "loaded", st)
            check("and it answers the same when loaded again",
                  chat(client, "tiny-llama").choices[0].message.content == want["tiny-llama"][0])
            st = states(client)
            check("... unloading the other", st["tiny-qwen2"]["state"] == "unloaded" and st["tiny-llama"]["state"] == "loaded", st)
        finally:
            stop(proc)

        # Room for the smaller alone: the larger is 507, and the smaller stays loaded and serving.
        small, large = sorted(sizes, key=lambda n: sizes[n])
        proc, base = start(spore, ["--models", models, "--max-memory", str(sizes[small])])
        try:
            client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
            chat(client, small)
            status, body = post(base, "/v1/chat/completions", {"model": large, "messages": CHAT, "max_tokens": 2})
            check("a model larger than --max-memory alone is 507", status == 507 and body["error"]["code"] == "model_too_large"
                  and "--max-memory" in body["error"]["message"], body)
            st = states(client)
            check("... and the loaded model is not disturbed", st[small]["state"] == "loaded" and st[large]["state"] == "too_large", st)
            check("... and still serves", chat(client, small).choices[0].message.content == want[small][0])
        finally:
            stop(proc)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
