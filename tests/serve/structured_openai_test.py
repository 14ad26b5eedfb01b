#!/usr/bin/env python3
"""The `openai` Python client's structured-output and tool calls against one `spore serve --models
DIR` that also serves embeddings (issue 29; NOTE [Grammars], NOTE [Many models]): the two tiny
decoders of tests/fixtures/serve and the BERT embedding fixture, linked into a temporary folder.

For each decoder, by name through the one server:
- `client.chat.completions.parse(response_format=<pydantic model>)`: the client's own strict
  json_schema; the parsed object is there and pydantic validated it;
- json_schema answers under a set of schemas with the draft 2020-12 keywords OpenAI's structured
  outputs accept (enum, const, anyOf, prefixItems, min/maxItems, string formats, pattern, numeric
  bounds, nested objects and arrays), each validated by `jsonschema`'s Draft 2020-12 validator
  with its format checker, an implementation independent of Spore;
- json_object: the content is one JSON object;
- tools with tool_choice "required" (parallel calls allowed) and with a named function: every call
  names a declared tool and its arguments validate against that tool's parameters, streamed or
  not (the streamed deltas reassemble to the same calls);
and in the same server, embeddings of the BERT fixture equal transformers' vectors (reference.json).
Random weights: what the model writes is arbitrary, which is the point - only the constraint can
make it valid.

Usage: structured_openai_test.py SPORE_BINARY SOURCE_DIR
Re-runs itself under the peers' Python when this one lacks `openai`; 77 (skipped) when none has it.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Annotated, List, Literal, Optional

HERE = os.path.dirname(os.path.abspath(__file__))

sys.path.insert(0, HERE)
import peers_python  # noqa: E402

peers_python.require("openai", "jsonschema", "pydantic")
import jsonschema  # noqa: E402
import openai  # noqa: E402
import pydantic  # noqa: E402
import openai_client_check as occ  # noqa: E402

failures = occ.failures


def check(name, ok, detail=""):
    occ.check(name, ok, str(detail) if detail != "" else "")


# Lengths bounded (maxLength, maxItems, integer bounds), as for SCHEMAS below.
Short = Annotated[str, pydantic.Field(max_length=8)]


class Pet(pydantic.BaseModel):
    kind: Literal["cat", "dog", "fish"]
    age: Annotated[int, pydantic.Field(ge=0, le=30)]


class Person(pydantic.BaseModel):
    name: Short
    nickname: Optional[Short]
    pets: Annotated[List[Pet], pydantic.Field(max_length=2)]


# Bounded, so that a random model reaches the end within max_tokens: the grammar allows nothing else.
SCHEMAS = {
    "enum_const_bounds": {
        "type": "object",
        "properties": {"colour": {"enum": ["red", "green", "blue"]}, "version": {"const": 2},
                       "score": {"type": "number", "minimum": -5, "maximum": 5},
                       "count": {"type": "integer", "minimum": 10, "maximum": 99}},
        "required": ["colour", "version", "score", "count"], "additionalProperties": False},
    "any_of_and_nesting": {
        "type": "object",
        "properties": {"id": {"anyOf": [{"type": "integer", "minimum": 0, "maximum": 999},
                                        {"type": "string", "maxLength": 6}]},
                       "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}, "note": {"type": "null"}},
                                 "required": ["ok", "note"], "additionalProperties": False}},
        "required": ["id", "inner"], "additionalProperties": False},
    "arrays": {
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "integer", "minimum": 0, "maximum": 9},
                                                                 {"enum": ["a", "b"]}], "items": False},
                       "tags": {"type": "array", "items": {"enum": ["x", "y", "z"]}, "minItems": 1, "maxItems": 3}},
        "required": ["pair", "tags"], "additionalProperties": False},
    "string_formats": {
        "type": "object",
        "properties": {"day": {"type": "string", "format": "date"}, "uid": {"type": "string", "format": "uuid"},
                       "code": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{3}$"}},
        "required": ["day", "uid", "code"], "additionalProperties": False},
}

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "maxLength": 12},
                                          "days": {"type": "integer", "minimum": 1, "maximum": 7}},
                                          "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "convert", "description": "Convert an amount",
                                      "parameters": {"type": "object", "properties": {
                                          "amount": {"type": "number", "minimum": 0, "maximum": 1000},
                                          "to": {"enum": ["EUR", "USD"]}},
                                          "required": ["amount", "to"], "additionalProperties": False}}},
]
PARAMS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}


def validation_error(schema, value):
    """None when value is valid under schema (Draft 2020-12, formats checked), else the message."""
    v = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(v.iter_errors(value), key=str)
    return str(errors[0].message) if errors else None


def ask(client, model, prompt, max_tokens, **kw):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                          max_tokens=max_tokens, temperature=0.8, seed=7, **kw)


def check_calls(label, calls, allowed):
    check(f"{label}: at least one call", len(calls) >= 1, calls)
    for name, arguments in calls:
        check(f"{label}: '{name}' is a declared tool", name in allowed, name)
        try:
            args = json.loads(arguments)
        except ValueError as e:
            check(f"{label}: arguments parse", False, f"{arguments!r}: {e}")
            continue
        if name in PARAMS:
            err = validation_error(PARAMS[name], args)
            check(f"{label}: arguments of '{name}' validate", err is None, f"{err}: {args}")


def streamed_calls(stream):
    """Reassembles streamed tool_call deltas by index into (name, arguments), as clients do."""
    calls, finish = {}, None
    for chunk in stream:
        for c in chunk.choices:
            for d in c.delta.tool_calls or []:
                name, args = calls.get(d.index, ("", ""))
                calls[d.index] = (name + (d.function.name or ""), args + (d.function.arguments or ""))
            finish = c.finish_reason or finish
    return [calls[i] for i in sorted(calls)], finish


def check_model(client, model):
    parsed = client.chat.completions.parse(model=model, messages=[{"role": "user", "content": "Describe a person."}],
                                           max_tokens=300, temperature=0.8, seed=3, response_format=Person)
    msg = parsed.choices[0].message
    check(f"{model}: parse(response_format=Person) gives a validated Person",
          parsed.choices[0].finish_reason == "stop" and isinstance(msg.parsed, Person), msg.content)

    for name, schema in SCHEMAS.items():
        r = ask(client, model, "Answer in JSON.", 300,
                response_format={"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}})
        text = r.choices[0].message.content
        try:
            value = json.loads(text)
            err = validation_error(schema, value)
        except ValueError as e:
            err = f"not JSON: {e}"
        check(f"{model}: json_schema '{name}' answer validates",
              r.choices[0].finish_reason == "stop" and err is None, f"{err}: {text!r}")

    # json_object bounds nothing: a random model's strings run until '"' is drawn (about one
    # token in 260), so some answers reach max_tokens. Every answer that ends by itself must be one
    # object, and over eight seeds at least one must end by itself.
    ended = 0
    for seed in range(8):
        r = client.chat.completions.create(model=model, messages=[{"role": "user", "content": "Give me a JSON object."}],
                                           max_tokens=900, temperature=0.8, seed=seed,
                                           response_format={"type": "json_object"})
        text, finish = r.choices[0].message.content, r.choices[0].finish_reason
        check(f"{model}: json_object (seed {seed}) ends by itself or by length", finish in ("stop", "length"), finish)
        if finish == "stop":
            ended += 1
            try:
                ok = isinstance(json.loads(text), dict)
            except ValueError:
                ok = False
            check(f"{model}: json_object answer (seed {seed}) is one JSON object", ok, repr(text))
    check(f"{model}: some json_object answers end by themselves", ended >= 1, ended)

    r = ask(client, model, "Weather in Paris, and 10 dollars in euros?", 300, tools=TOOLS, tool_choice="required")
    calls = [(c.function.name, c.function.arguments) for c in r.choices[0].message.tool_calls or []]
    check(f"{model}: tool_choice required ends with tool_calls", r.choices[0].finish_reason == "tool_calls", r.choices[0])
    check_calls(f"{model}: tool_choice required", calls, set(PARAMS))
    s, finish = streamed_calls(ask(client, model, "Weather in Paris, and 10 dollars in euros?", 300, tools=TOOLS,
                                   tool_choice="required", stream=True))
    check(f"{model}: streamed tool calls equal the unstreamed ones", s == calls and finish == "tool_calls", (s, calls))

    r = ask(client, model, "Convert 10 dollars.", 200, tools=TOOLS, parallel_tool_calls=False,
            tool_choice={"type": "function", "function": {"name": "convert"}})
    calls = [(c.function.name, c.function.arguments) for c in r.choices[0].message.tool_calls or []]
    check(f"{model}: a named function is the one call", len(calls) == 1, calls)
    check_calls(f"{model}: named tool_choice", calls, {"convert"})


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    spore, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    fixtures = os.path.join(src, "tests", "fixtures")
    work = tempfile.mkdtemp(prefix="spore_structured_")
    proc = None
    try:
        models = os.path.join(work, "models")
        os.makedirs(models)
        for name in ("tiny-llama", "tiny-qwen2"):
            os.symlink(os.path.join(fixtures, "serve", "bytes", name + ".gguf"), os.path.join(models, name + ".gguf"))
        os.symlink(os.path.join(fixtures, "embed", "bert"), os.path.join(models, "bert"))
        port = occ.free_port()
        proc = subprocess.Popen([spore, "serve", "--port", str(port), "--host", "127.0.0.1", "--slots", "2",
                                 "--threads", "2", "--models", models], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        base = f"http://127.0.0.1:{port}"
        if not occ.wait_healthy(base, 60):
            proc.kill()
            raise SystemExit("spore serve did not become healthy: " + proc.stderr.read().decode(errors="replace"))
        client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
        check("models.list() has the decoders and the encoder",
              sorted(m.id for m in client.models.list().data) == ["bert", "tiny-llama", "tiny-qwen2"])
        for model in ("tiny-llama", "tiny-qwen2"):
            check_model(client, model)
        ref = json.load(open(os.path.join(fixtures, "embed", "bert", "reference.json"), encoding="utf-8"))
        texts = [t["text"] for t in ref["texts"]]
        e = client.embeddings.create(model="bert", input=texts)
        check("bert in the same server: transformers' mean-pooled vectors, in input order",
              len(e.data) == len(texts) and all(
                  d.index == i and len(d.embedding) == len(t["mean"]) and
                  all(abs(a - b) < 1e-4 for a, b in zip(d.embedding, t["mean"]))
                  for i, (d, t) in enumerate(zip(e.data, ref["texts"]))))
    finally:
        if proc:
            proc.terminate()
            proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
