#!/usr/bin/env python3
"""The `openai` Python client's embeddings calls against `spore serve` (NOTE [Embeddings]), on the
tiny encoder fixtures of tools/make_embedding_fixtures.py, whose reference.json holds
transformers' pooled vectors: client.embeddings.create with a string, a list of strings, token
ids, encoding_format base64 (decoded by the client) and dimensions (truncated, renormalised);
usage.prompt_tokens; bad inputs as 400s the client raises as BadRequestError; an unknown model
as 404 model_not_found; POST /v1/rerank on the cross-encoder (llama.cpp's request and answer
shape) against transformers' scores; and the completion routes' refusal on an encoder.

Usage: embeddings_openai_test.py SPORE_BINARY FIXTURES_DIR
The `openai` package comes from the peers' Python (scripts/install-py-peers.sh serve): when this
interpreter lacks it, the script re-runs itself under $SPORE_PEERS_PYTHON or
<source>/.venv-peers/bin/python; with neither it exits 77 (skipped).
"""
import base64
import json
import math
import os
import struct
import subprocess
import sys
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
import peers_python  # noqa: E402

peers_python.require("openai")
import openai  # noqa: E402
import openai_client_check as occ  # noqa: E402

failures, free_port = occ.failures, occ.free_port


def check(name, ok, detail=""):
    occ.check(name, ok, str(detail) if detail != "" else "")


def start(spore, model):
    port = free_port()
    proc = subprocess.Popen([spore, "serve", "--model", model, "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    if occ.wait_healthy(base, 60):
        return proc, base
    proc.kill()
    raise SystemExit("spore serve did not become healthy: " + proc.stderr.read().decode(errors="replace"))


def post(base, path, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def close(a, b, tol=1e-4):
    return len(a) == len(b) and all(abs(x - y) <= tol for x, y in zip(a, b))


def embedding_checks(spore, fixtures):
    ref = json.load(open(os.path.join(fixtures, "bert", "reference.json"), encoding="utf-8"))
    proc, base = start(spore, os.path.join(fixtures, "bert"))
    try:
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
        model = client.models.list().data[0].id
        texts = [t["text"] for t in ref["texts"]]
        r = client.embeddings.create(model=model, input=texts)
        check("list of strings: transformers' mean-pooled vectors",
              len(r.data) == len(texts) and all(close(d.embedding, t["mean"]) for d, t in zip(r.data, ref["texts"])))
        check("usage.prompt_tokens counts every token", r.usage.prompt_tokens == sum(len(t["ids"]) for t in ref["texts"]),
              r.usage.prompt_tokens)
        one = client.embeddings.create(model=model, input=texts[1])
        check("one string", len(one.data) == 1 and close(one.data[0].embedding, ref["texts"][1]["mean"]))
        ids = client.embeddings.create(model=model, input=ref["texts"][2]["ids"])
        check("token ids", close(ids.data[0].embedding, ref["texts"][2]["mean"]))
        b64 = client.embeddings.create(model=model, input=texts[:2], encoding_format="base64")
        # Asked for explicitly, the client hands the string over as it came (it decodes only the
        # base64 it asked for on its own, as it does for every call above).
        decoded = [struct.unpack(f"<{len(base64.b64decode(d.embedding)) // 4}f", base64.b64decode(d.embedding))
                   if isinstance(d.embedding, str) else d.embedding for d in b64.data]
        check("base64: little-endian float32", all(close(v, t.embedding, 0) for v, t in zip(decoded, r.data)))
        # The openai client asks for base64 by default and decodes it; a raw request shows the string.
        status, raw = post(base, "/v1/embeddings", {"input": "Hello world!", "encoding_format": "base64"})
        check("base64 is a string on the wire", status == 200 and isinstance(raw["data"][0]["embedding"], str))
        status, raw = post(base, "/v1/embeddings", {"input": texts[0]})
        check("float is the default on the wire", status == 200 and close(raw["data"][0]["embedding"], ref["texts"][0]["mean"])
              and raw["object"] == "list" and raw["data"][0]["object"] == "embedding" and raw["data"][0]["index"] == 0)
        d8 = client.embeddings.create(model=model, input=texts[0], dimensions=8)
        head = ref["texts"][0]["mean"][:8]
        norm = math.sqrt(sum(x * x for x in head))
        check("dimensions truncates and renormalises", close(d8.data[0].embedding, [x / norm for x in head]))
        for name, bad in (("empty array", []), ("empty string", ""), ("non-string entry", ["a", {"x": 1}]),
                          ("too long", "word " * 100)):
            try:
                client.embeddings.create(model=model, input=bad)
                check(f"{name} is a 400", False, "no error")
            except openai.BadRequestError as e:
                check(f"{name} is a 400", e.status_code == 400 and isinstance(e.body, dict) and e.body.get("message"),
                      e.body.get("code") if isinstance(e.body, dict) else e)
        try:
            client.embeddings.create(model=model, input=texts[0], dimensions=33)
            check("dimensions past the model's is a 400", False, "no error")
        except openai.BadRequestError as e:
            check("dimensions past the model's is a 400", "dimensions" in str(e))
        try:
            client.embeddings.create(model="no-such-model", input="x")
            check("unknown model is a 404", False, "no error")
        except openai.NotFoundError as e:
            check("unknown model is a 404", e.body.get("code") == "model_not_found")
        try:
            client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
            check("chat on an encoder is a 400", False, "no error")
        except openai.BadRequestError as e:
            check("chat on an encoder is a 400", e.body.get("code") == "model_not_generative")
        status, _ = post(base, "/v1/rerank", {"query": "q", "documents": ["d"]})
        check("rerank on an embedding model is a 400", status == 400)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def rerank_checks(spore, fixtures):
    ref = json.load(open(os.path.join(fixtures, "bert_rerank", "reference.json"), encoding="utf-8"))
    proc, base = start(spore, os.path.join(fixtures, "bert_rerank"))
    try:
        docs = [d["text"] for d in ref["documents"]]
        status, r = post(base, "/v1/rerank", {"query": ref["query"], "documents": docs, "top_n": 3})
        want = sorted(range(len(docs)), key=lambda i: -ref["documents"][i]["score"])[:3]
        check("rerank: top_n results by score", status == 200 and [x["index"] for x in r["results"]] == want, r)
        check("rerank: transformers' scores", status == 200 and all(
            abs(x["relevance_score"] - ref["documents"][x["index"]]["score"]) < 1e-4 for x in r["results"]))
        check("rerank: usage", status == 200 and r["usage"]["prompt_tokens"] == sum(len(d["ids"]) for d in ref["documents"]))
        status, r = post(base, "/v1/rerank", {"query": ref["query"], "documents": []})
        check("rerank: empty documents is a 400", status == 400 and r["error"]["param"] == "documents")
        status, r = post(base, "/v1/embeddings", {"input": "x"})
        check("embeddings on a reranker is a 400", status == 400 and r["error"]["code"] == "model_not_embedding")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    spore, fixtures = sys.argv[1], sys.argv[2]
    embedding_checks(spore, fixtures)
    rerank_checks(spore, fixtures)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
