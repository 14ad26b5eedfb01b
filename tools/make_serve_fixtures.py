#!/usr/bin/env python3
"""Writes tests/fixtures/serve/: two tiny random-weight decoders with a tokenizer and a chat
template, for the many-models server test (tests/serve/many_models_openai_test.py, NOTE [Many
models]). They are copies of the llama and qwen2 fixtures llama.cpp's converter wrote
(tests/fixtures/llm/*/model-llama-cpp.gguf: byte vocabularies, 64-token contexts) with a short
`tokenizer.chat_template` added by gguf-py's own gguf_new_metadata.py (llama.cpp's tool), so the
chat route has a template that fits the context.

It also writes tests/fixtures/serve/bytes/: the same two models with a GPT-2 byte-level
vocabulary (the 256 byte tokens of GPT-2's byte table, eight merges - so tokens of several bytes
reach the grammar's token trie - and three control tokens) in
place of the SentencePiece one, whose 256 pieces lack '"', '{' and most of what JSON needs; the
embedding (and untied output) rows of the eleven new tokens are drawn from a seeded normal, and the
context is raised from 64 to 1024 tokens (a rope model's weights do not depend on it). Structured
outputs (tests/serve/structured_openai_test.py) need both: a JSON answer in bytes takes a few
hundred tokens. Written with gguf-py's GGUFReader/GGUFWriter (llama.cpp's library).

And tests/fixtures/serve/tiny-llama-q4_0.gguf: the llama copy quantised to Q4_0 by llama.cpp's own
`llama-quantize` (the weights that Spore repacks at load; the server's --no-repack test).

Usage: tools/make_serve_fixtures.py  (run with the peers' Python, which has gguf-py)
"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from llama_cpp_sdist import llama_cpp_source, llama_tool  # noqa: E402

# Each message's text on its own line: a handful of tokens in a byte vocabulary.
TEMPLATE = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}"


CONTEXT = 1024
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# In GPT-2's byte table "Ġ" is the space; each merge's result is a token after the 256 bytes.
MERGES = ["Ġ t", "h e", "Ġ a", "i n", '" :', ": Ġ", ", Ġ", 'Ġ "']


def gpt2_byte_table():
    """GPT-2's byte-to-character table: printable bytes stand for themselves, the rest are shifted
    to U+0100 and up in byte order (the published bytes_to_unicode rule)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return [table[b] for b in range(256)]


def byte_vocab_copy(gguf, src, dst, family):
    reader = gguf.GGUFReader(src)
    writer = gguf.GGUFWriter(dst, family)
    skip = ("GGUF.", "general.architecture", "tokenizer.ggml.")
    for field in reader.fields.values():
        if field.name.startswith(skip):
            continue
        value = field.contents()
        if field.name == f"{family}.context_length":
            value = CONTEXT
        if field.name == f"{family}.vocab_size":
            value = 256 + len(MERGES) + len(SPECIAL)
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, value, field.types[0], sub_type=sub)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("gpt-2")
    merged = [m.replace(" ", "") for m in MERGES]
    writer.add_token_list(gpt2_byte_table() + merged + SPECIAL)
    writer.add_token_types([gguf.TokenType.NORMAL] * (256 + len(merged)) + [gguf.TokenType.CONTROL] * len(SPECIAL))
    writer.add_token_merges(MERGES)
    writer.add_bos_token_id(256 + len(merged))
    writer.add_eos_token_id(256 + len(merged) + 2)
    rng = np.random.default_rng(29)
    for t in reader.tensors:
        data = np.array(t.data)
        if t.name in ("token_embd.weight", "output.weight"):
            assert t.tensor_type == gguf.GGMLQuantizationType.F32 and data.shape[0] == 256, (t.name, data.shape)
            rows = rng.normal(0, float(data.std()), (len(MERGES) + len(SPECIAL), data.shape[1])).astype(np.float32)
            data = np.concatenate([data, rows])
        writer.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    src = llama_cpp_source(os.path.join(ROOT, "build", "peers"), [sys.executable, "-m", "pip"], "0.3.36")
    tool = os.path.join(src, "gguf-py", "gguf", "scripts", "gguf_new_metadata.py")
    sys.path.insert(0, os.path.join(src, "gguf-py"))
    import gguf
    out = os.path.join(ROOT, "tests", "fixtures", "serve")
    os.makedirs(out, exist_ok=True)
    for family in ("llama", "qwen2"):
        dst = os.path.join(out, f"tiny-{family}.gguf")
        subprocess.run([sys.executable, tool, "--force", "--general-name", f"tiny-{family}", "--chat-template", TEMPLATE,
                        os.path.join(ROOT, "tests", "fixtures", "llm", family, "model-llama-cpp.gguf"), dst],
                       check=True, stdout=subprocess.DEVNULL)
        print(dst, os.path.getsize(dst))
        os.makedirs(os.path.join(out, "bytes"), exist_ok=True)
        wide = os.path.join(out, "bytes", f"tiny-{family}.gguf")
        byte_vocab_copy(gguf, dst, wide, family)
        print(wide, os.path.getsize(wide))
    quantize = llama_tool(os.path.join(ROOT, "build", "peers"), [sys.executable, "-m", "pip"], "llama-quantize")
    q4 = os.path.join(out, "tiny-llama-q4_0.gguf")
    subprocess.run([quantize, os.path.join(out, "tiny-llama.gguf"), q4, "Q4_0"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(q4, os.path.getsize(q4))


if __name__ == "__main__":
    main()
