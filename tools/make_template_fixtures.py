#!/usr/bin/env python3
"""Writes the reference renderings of the chat-template tests (tests/fixtures/templates/).

Run with the peers' venv from the repository root:
    /work/main/.venv-peers/bin/python tools/make_template_fixtures.py
The output (cases.json, features.json) is committed; CI never runs this script.

Two files:
  cases.json     every template under tests/fixtures/templates/ (byte-for-byte copies of the
                 models' tokenizer_config.json / chat_template.jinja) rendered over a set of
                 conversations, the way transformers' apply_chat_template(tokenize=False) renders
                 them: messages normalised (None-valued keys dropped, reasoning fields aliased),
                 the tokenizer's special tokens merged under the kwargs, tools/documents passed
                 by name, jinja2 configured by transformers itself (_compile_jinja_template).
                 For the Qwen3 tokenizer, whose tokenizer.json we have, the script also checks
                 that AutoTokenizer.apply_chat_template gives the same text.
  features.json  small templates, one construct each, rendered through the same transformers
                 environment; "error": true where jinja2 raises.
"""
import json
import os
import sys

from transformers.utils import chat_template_utils as ctu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "tests", "fixtures", "templates")
SPECIAL = ["bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"]

# TinyLlama's chat_template.jinja has no config beside it; these are the named tokens of its
# tokenizer_config.json on the Hub (Llama 2's vocabulary), which transformers would pass.
TINYLLAMA_TOKENS = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "</s>"}


def token_text(v):
    return v["content"] if isinstance(v, dict) else v


def load_template(rel):
    path = os.path.join(FIX, rel)
    if rel.endswith(".jinja"):
        return open(path, encoding="utf-8").read(), dict(TINYLLAMA_TOKENS)
    cfg = json.load(open(path, encoding="utf-8"))
    tokens = {k: str(token_text(cfg[k])) for k in SPECIAL if cfg.get(k) is not None}
    return cfg["chat_template"], tokens


def render(template, tokens, messages, add_generation_prompt, kwargs):
    """apply_chat_template(tokenize=False) without a tokenizer object (same steps, same order)."""
    kwargs = dict(kwargs)
    tools = kwargs.pop("tools", None)
    documents = kwargs.pop("documents", None)
    chat = ctu._normalize_chat_messages(messages)
    template_kwargs = {**tokens, **kwargs}
    out, _ = ctu.render_jinja_template(
        conversations=[chat], tools=tools, documents=documents, chat_template=template,
        add_generation_prompt=add_generation_prompt, **template_kwargs)
    return out[0]


WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city, e.g. \"Paris\" or 北京"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
                "days": {"type": "integer", "description": "Forecast days"},
            },
            "required": ["city"],
        },
    },
}
SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the web",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "limit": {"type": ["integer", "null"]},
                           "score": {"type": "number", "default": 0.5}},
            "required": ["query"],
        },
    },
}

SYS = {"role": "system", "content": "You are a helpful assistant."}
CONVERSATIONS = {
    "single_user": [{"role": "user", "content": "Hello!"}],
    "system_user": [SYS, {"role": "user", "content": "What is 2+2?"}],
    "multi_turn": [
        SYS,
        {"role": "user", "content": "Hi, who are you?"},
        {"role": "assistant", "content": "I am an assistant.\nHow can I help?"},
        {"role": "user", "content": "Tell me a joke.  "},
        {"role": "assistant", "content": "Why did the chicken cross the road?"},
        {"role": "user", "content": "Why?"},
    ],
    "unicode": [
        {"role": "user", "content": "你好，世界！ こんにちは 🌍👩‍👩‍👧 \"quotes\" and 'apostrophes' \\ back"},
        {"role": "assistant", "content": "مرحبا — नमस्ते\ttab"},
        {"role": "user", "content": "<|im_start|> looks special"},
    ],
    "tool_calls": [
        SYS,
        {"role": "user", "content": "What's the weather in Paris and 北京?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}},
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "北京", "days": 3}}},
        ]},
        {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21.5}"},
        {"role": "tool", "name": "get_weather", "content": "晴 30°C"},
        {"role": "assistant", "content": "Paris is 21.5°C and Beijing is sunny."},
        {"role": "user", "content": "Thanks"},
    ],
    "tool_call_with_text": [
        {"role": "user", "content": "Search for cats"},
        {"role": "assistant", "content": "Let me search.", "tool_calls": [
            {"type": "function", "function": {"name": "search", "arguments": {"query": "cats \"cute\"", "limit": None, "score": 1.0}}},
        ]},
        {"role": "tool", "content": "<tool_response>found</tool_response>"},
    ],
    "thinking": [
        {"role": "user", "content": "Solve x+1=2"},
        {"role": "assistant", "content": "x = 1", "reasoning_content": "Subtract 1 from both sides."},
        {"role": "user", "content": "And x+2=5?"},
        {"role": "assistant", "content": "<think>\nSubtract 2.\n</think>\n\nx = 3"},
        {"role": "user", "content": "Great"},
    ],
    "thinking_last_assistant": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", "reasoning_content": "\nGreet back.\n"},
    ],
}
TOOLS = [WEATHER_TOOL, SEARCH_TOOL]

# (conversation, add_generation_prompt, kwargs)
VARIANTS = [
    ("single_user", True, {}),
    ("single_user", False, {}),
    ("system_user", True, {}),
    ("multi_turn", True, {}),
    ("multi_turn", False, {}),
    ("unicode", True, {}),
    ("tool_calls", True, {"tools": TOOLS}),
    ("tool_calls", False, {}),
    ("tool_call_with_text", True, {"tools": [SEARCH_TOOL]}),
    ("system_user", True, {"tools": [WEATHER_TOOL]}),
    ("thinking", True, {}),
    ("thinking", True, {"enable_thinking": False}),
    ("thinking", True, {"enable_thinking": True}),
    ("thinking_last_assistant", False, {}),
    ("single_user", True, {"enable_thinking": False}),
]

TEMPLATES = [
    "qwen2.5-0.5b-instruct/tokenizer_config.json",
    "qwen3-0.6b/tokenizer_config.json",
    "qwen3-tokenizer/tokenizer_config.json",
    "smollm2-135m-instruct/tokenizer_config.json",
    "minicpm3-4b/tokenizer_config.json",
    "tinyllama-1.1b-chat-v1.0/chat_template.jinja",
]

# One construct each, rendered with messages=FEATURE_MESSAGES and add_generation_prompt=True.
FEATURE_MESSAGES = [{"role": "system", "content": "S"}, {"role": "user", "content": "Héllo wörld"},
                    {"role": "assistant", "content": "  A  "}]
FEATURES = [
    "{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
    "{% for m in messages %}{{ loop.previtem.role if loop.previtem is defined else '-' }}>{{ loop.nextitem.role if loop.nextitem is defined else '-' }};{% endfor %}",
    "{% for x in [] %}a{% else %}empty{% endfor %}",
    "{% for m in messages if m.role != 'system' %}{{ loop.index }}{{ m.role }}{{ loop.length }}{% endfor %}",
    "{% for m in messages %}{% if m.role == 'user' %}{% continue %}{% endif %}{{ m.role }}{% if loop.index > 2 %}{% break %}{% endif %}{% endfor %}",
    "{% set ns = namespace(n=0, s='') %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.s = ns.s ~ m.role[0] %}{% endfor %}{{ ns.n }}{{ ns.s }}",
    "{% set x %}block {{ messages|length }}{% endset %}[{{ x }}]",
    "{% set a, b = 1, 'two' %}{{ a }}{{ b }}",
    "{% macro greet(name, punct='!') %}Hi {{ name }}{{ punct }}{% endmacro %}{{ greet('A') }}{{ greet('B', punct='?') }}{{ greet(name='C') }}",
    "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}inner {{ messages[0].content }}{% endcall %}",
    "{{ messages[::-1]|map(attribute='role')|join(',') }} {{ [1,2,3,4,5][1:4] }} {{ [1,2,3,4,5][::2] }} {{ 'abcdef'[-3:] }} {{ 'abcdef'[::-2] }} {{ [1,2,3][5:] }}",
    "{{ 'a' in 'cat' }} {{ 'x' not in ['x'] }} {{ 'role' in messages[0] }} {{ 1 in [1.0] }}",
    "{{ 1 + 2 * 3 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 7 / 2 }} {{ 2 ** 10 }} {{ 6 / 3 }} {{ 1.5 + 1 }} {{ 0.1 + 0.2 }} {{ 1e20 }} {{ 1e-5 }} {{ 123456789.0 * 1000000000 }}",
    "{{ 'a' ~ 1 ~ none ~ true }} {{ 'x' * 3 }} {{ [1] + [2] }} {{ 3 > 2 > 1 }} {{ 1 == 1.0 }} {{ true == 1 }} {{ 'b' > 'a' }} {{ [1,2] < [1,3] }}",
    "{{ none }}|{{ undefined_thing }}|{{ true }}|{{ [1, 'a', none, true, 1.5, {'k': 'v'}] }}|{{ {'a': [1, 2]} }}|{{ \"it's\" }}|{{ ['it\\'s', \"q\\\"\"] }}",
    "{{ x if x is defined else 'nox' }} {{ 'y' if false }}|{{ not true }} {{ true and 'v' }} {{ false or 'w' }} {{ '' or none }} {{ 0 and 1 }}",
    "{{ none is none }} {{ 1 is number }} {{ true is number }} {{ 1 is integer }} {{ true is integer }} {{ 1.0 is float }} {{ 'a' is string }} {{ {} is mapping }} {{ [] is sequence }} {{ {} is sequence }} {{ 'a' is iterable }} {{ 1 is iterable }} {{ true is boolean }} {{ false is false }} {{ 0 is false }} {{ 1 is true }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 'a' is lower }} {{ 1 is eq 1 }} {{ 2 is gt 1 }} {{ 1 is ne(2) }} {{ x is undefined }} {{ messages is defined }}",
    "{{ '  pad  '|trim }}|{{ 'xxhixx'|trim('x') }}|{{ 'Hello World'|lower }}|{{ 'hello'|upper }}|{{ 'hello wOrld-foo bar'|title }}|{{ 'hELLO world'|capitalize }}|{{ 'a-b-c'|replace('-', '+') }}|{{ 'aaa'|replace('a', 'b', 2) }}",
    "{{ messages|length }} {{ 'héllo'|length }} {{ {'a': 1}|length }} {{ messages|count }} {{ [3,1,2]|first }} {{ [3,1,2]|last }} {{ 'abc'|first }} {{ [3,1,2]|sort }} {{ [3,1,2]|sort(reverse=true) }} {{ ['b','A','a','C']|sort }} {{ [1,2,2,3,1]|unique|list }} {{ ['a','A','b']|unique|list }} {{ [1,2,3]|reverse|list }} {{ 'abc'|reverse }}",
    "{{ {'b': 1, 'a': 2}|dictsort }} {{ {'b': 1, 'a': 2}|items|list }} {{ {'b': 1, 'a': 2}.items()|list }} {{ {'b': 1, 'a': 2}.keys()|list }} {{ {'b': 1, 'a': 2}.values()|list }} {{ {'a': 1}.get('a') }} {{ {'a': 1}.get('z') }} {{ {'a': 1}.get('z', 'dflt') }}",
    "{{ messages|selectattr('role', 'equalto', 'user')|map(attribute='content')|list }} {{ messages|rejectattr('role', 'eq', 'user')|map(attribute='role')|join }} {{ [{'a': 1}, {'b': 2}]|selectattr('a')|list }} {{ [1, 0, 2]|select|list }} {{ [1, 2, 3, 4]|select('odd')|list }} {{ [1, 2, 3, 4]|reject('even')|list }} {{ ['a','b']|map('upper')|list }}",
    "{{ '3'|int + 1 }} {{ '3.7'|float }} {{ 3.9|int }} {{ 'x'|int }} {{ 'x'|int(7) }} {{ -3|abs }} {{ 5|string ~ '!' }} {{ 1.0|string }} {{ [1,2]|string }} {{ none|string }} {{ 'abc'|list }} {{ 7|float }}",
    "{{ y|default('dflt') }} {{ y|d('d2') }} {{ ''|default('empty', true) }} {{ ''|default('empty') }} {{ none|default('n') }}",
    "{{ messages[0]|tojson }} {{ {'k': [1, 2.5, true, none, 'ü\"\\n\\t/'], 'n': {}}|tojson }} {{ 'x'|tojson }} {{ {'a': 1, 'b': [1, 2]}|tojson(indent=2) }} {{ {'b': 1, 'a': 2}|tojson(sort_keys=true) }} {{ [1, 2]|tojson(separators=(',', ':')) }} {{ 1e100|tojson }} {{ 3.0|tojson }} {{ ['\\u0001\\u007f\\u2028']|tojson }}",
    "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(' ', 1) }} {{ 'xxhixx'.strip('x') }} {{ '  hi  '.lstrip() }}| {{ '  hi  '.rstrip() }}| {{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('lo', 'x')) }} {{ 'Hello'.upper() }} {{ 'Hello'.lower() }} {{ 'hello world'.title() }} {{ 'hello'.capitalize() }} {{ 'a-b'.replace('-', '_') }} {{ 'hello'.find('l') }} {{ 'hello'.count('l') }} {{ ', '.join(['a', 'b']) }} {{ 'a\\nb'.splitlines() }}",
    "{{ 'line1\\nline2\\n\\nline4'|indent(2) }}|{{ 'l1\\nl2'|indent(4, true) }}|{{ 'l1\\n\\nl2'|indent(2, blank=true) }}",
    "{{ raise_exception('bad role: ' ~ messages[1].role) }}",
    "{{ messages[7] }}|{{ messages[7] is defined }}|{{ messages[0]['nope'] }}|{{ messages[0].nope is defined }}|{{ messages[-1].role }}|{{ (messages|last).role }}",
    "{{ messages[0].nope.deeper }}",
    "{{ 'a' + 1 }}",
    "{{ messages|length + '1' }}",
    "  {% if true %}\n    text\n  {% endif %}\n  {%- if true %} x {% endif -%}\n  end  \n{# comment #}\n  {#- c2 -#}  y\n{{- ' z ' -}}\n  w\n{%+ if true %}plus{% endif +%}\nafter\n  {{ 'v' }}  \n",
    "{% if messages %}\n{% for m in messages %}\n  {{ m.role }}\n{% endfor %}\n{% endif %}\ntail\n",
    "{%- set d = {'x': 1, 'y': {'z': [1, 2]}} -%}{{ d.y.z[1] }}{{ d['y']['z'][0] }}{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for k in d %}{{ k }}{% endfor %}{% for a, b in [[1, 2], [3, 4]] %}{{ a + b }}{% endfor %}",
    "{% if messages[0].role == 'system' %}sys{% elif messages[0].role == 'user' %}user{% else %}other{% endif %}{% if false %}no{% elif true %}yes{% endif %}",
    "{{ 'a' 'b' }} {{ \"esc\\x41\\u00e9\\t|\" }} {{ 1_000 }} {{ 0.5e1 }} {{ (1, 2) }} {{ [1, [2, [3]]][1][1][0] }} {{ -(3) }} {{ +3 }} {{ 2 * -1 }}",
    "{% generation %}gen {{ messages|length }}{% endgeneration %}",
    "{{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
    "{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{{ x }}{% endfor %}{{ x }}",
    "{{ 10 - 3 - 2 }} {{ 2 ** 3 ** 2 }} {{ not 1 == 2 }} {{ 1 if 0 else 2 if 0 else 3 }} {{ 'ab' < 'b' }} {{ 5 // 2.0 }} {{ 1 / 3 }} {{ 2.5e-7 * 1 }} {{ 1e16 }} {{ 123456789012345678 }}",
    "{% for m in messages %}{% for c in m.content %}{% if loop.index > 2 %}{% break %}{% endif %}{{ c }}{% endfor %}{% endfor %}",
    "{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(4) }} {{ f(2) + '|' }}",
    "{{ messages|map(attribute='content')|map('trim')|join('/') }} {{ messages|map(attribute='missing')|list }} {{ [[1,2],[3]]|map('length')|list }}",
    "{{ messages[0].content.startswith('S') and messages[1]['content'].endswith('wörld') }} {{ messages.0.role }}",
    "{%- for m in messages -%}\n  <{{ m.role }}>\n{%- endfor %}\n",
    "{{ 'x' if messages[0].content is string and not (messages[0].content.startswith('<a>') and messages[0].content.endswith('</a>')) else 'y' }}",
    "{{ {'a': 1} == {'a': 1} }} {{ [1, 2] == [1, 2] }} {{ none == none }} {{ x == none }} {{ 'a' != 'b' }}",
    "{% set x = 'a\"b'|safe %}{{ x + '<&>\"' }} {{ '<' ~ x }} {{ (x + 'y')|length }} {{ x|escape }} {{ '<i>'|e }} {{ (x ~ '  ')|safe|trim + '\"' }} {{ '\"' + x }} {{ (x|upper) + '&' }} {{ x * 2 + '<' }} {{ (x|replace('a', 'c')) + '<' }}",
    "{{ 'abc'[1] }} {{ [1, 2, 3][-1:] }} {{ (1,) }} {{ 1.5|int }} {{ '1e3'|int }} {{ ' 42 '|int }} {{ '1_000'|int }} {{ 'a b-c'.title() }} {{ none ~ 1 }} {{ {'é': 'ü'}|tojson(true) }} {{ [1]|tojson(false, 2) }} {{ '😀x'|length }} {{ '😀x'[0] }} {{ 'x😀y'[::-1] }}",
    "{{ 1 // 0 }}",
    "{{ messages.append(1) }}",
    "{{ 2 ** 0.5 }} {{ 10 ** -1 }} {{ -2 ** 2 }} {{ 1e300 * 1e10 }} {{ -0.0 }} {{ 1 / 7 * 7 }} {{ 100000000000000000.0 }} {{ 0.0001 }} {{ 0.00001 }} {{ 3 % -2 }} {{ -3.5 // 2 }} {{ 7.5 % 2 }}",
    "{% for a, b in {'x': 1, 'y': 2}.items() %}{{ a }}{{ b }}{% if not loop.last %},{% endif %}{% endfor %}|{% for x in 'ab' %}{{ loop.cycle('odd', 'even') }}{% endfor %}|{% for i in range(3) %}{{ i }}{% endfor %}{% for i in range(1, 7, 2) %}{{ i }}{% endfor %}",
    "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}{{ a is defined }}|{% raw %}{{ not parsed }}{% endraw %}|{{ 'Tab\there' }}",
    "{%- macro m(a, b=2) -%}[{{ a }},{{ b }},{{ varargs }},{{ kwargs }}]{%- endmacro -%}{{ m(1) }}{{ m(1, 3) }}{{ m(b=5, a=4) }}",
    "{{ messages|selectattr('role', 'in', ['user', 'system'])|map(attribute='role')|join('+') }} {{ messages|map(attribute='role')|unique|list|length }} {{ [3, 1, 2]|sort|first }} {{ ['b', 'a']|sort|join }} {{ [{'n': 2}, {'n': 1}]|sort(attribute='n')|map(attribute='n')|list }}",
    "{% for x in messages + [{'role': 'extra'}] if x.role != 'user' %}{{ x.role }}{% endfor %}|{% for x in none or [1, 2] %}{{ x }}{% endfor %}|{% for x in messages|reverse %}{{ loop.index }}{% endfor %}",
    "{% set t = 'ab' %}{{ t * 2 }}{{ t[0] }}{{ t[-1] }}{{ t[5] }}|{{ [1, 2, 3]|sum }} {{ [3, 1, 2]|min }} {{ [3, 1, 2]|max }} {{ 3.14159|round(2) }} {{ 2.5|round }}",
]


def main():
    cases = []
    from transformers import AutoTokenizer
    qwen_tok = AutoTokenizer.from_pretrained("/work/shared/data/tokenizers/qwen3")
    for rel in TEMPLATES:
        template, tokens = load_template(rel)
        for conv, agp, kwargs in VARIANTS:
            case = {"template": rel, "conversation": conv, "messages": CONVERSATIONS[conv],
                    "add_generation_prompt": agp, "kwargs": kwargs, "special_tokens": tokens}
            try:
                case["expected"] = render(template, tokens, CONVERSATIONS[conv], agp, kwargs)
            except Exception as e:  # the template itself rejects this input: we must fail too
                case["error"] = f"{type(e).__name__}: {e}"
            if rel.startswith("qwen3-tokenizer/") and "expected" in case:
                kw = dict(kwargs)
                tools = kw.pop("tools", None)
                direct = qwen_tok.apply_chat_template(CONVERSATIONS[conv], tools=tools, tokenize=False,
                                                      add_generation_prompt=agp, **kw)
                assert direct == case["expected"], (rel, conv)
            cases.append(case)
    feats = []
    for text in FEATURES:
        entry = {"template": text}
        try:
            entry["expected"] = render(text, {"bos_token": "<s>", "eos_token": "</s>"}, FEATURE_MESSAGES, True, {})
        except Exception as e:
            entry["error"] = f"{type(e).__name__}: {e}"
        feats.append(entry)
    with open(os.path.join(FIX, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tools/make_template_fixtures.py",
                   "transformers": __import__("transformers").__version__,
                   "jinja2": __import__("jinja2").__version__, "cases": cases},
                  f, ensure_ascii=False, indent=1)
    with open(os.path.join(FIX, "features.json"), "w", encoding="utf-8") as f:
        json.dump({"messages": FEATURE_MESSAGES, "special_tokens": {"bos_token": "<s>", "eos_token": "</s>"},
                   "features": feats}, f, ensure_ascii=False, indent=1)
    n_err = sum("error" in c for c in cases)
    print(f"{len(cases)} cases ({n_err} raise), {len(feats)} features "
          f"({sum('error' in x for x in feats)} raise)", file=sys.stderr)


if __name__ == "__main__":
    main()
