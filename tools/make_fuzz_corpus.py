#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/, docs/fuzzing.md).

Seeds are small valid files (so mutations start inside each format) plus the reproducers of
issue 15. Run from the repository root; the output is committed. Uses only the standard library.
"""
import gzip
import json
import os
import shutil
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")
FIX = os.path.join(ROOT, "tests", "fixtures")


def put(target, name, data):
    d = os.path.join(OUT, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy(target, path):
    put(target, os.path.basename(path), open(path, "rb").read())


def npy(descr, shape, payload):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + payload


def safetensors(tensors, metadata=None):
    header, data = {}, b""
    for name, (dtype, shape, payload) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + data


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    # .npy: NumPy-written fixtures of several dtypes, versions and byte orders, and issue 15's
    # reproducer (a 0 extent beside extents whose product overflows int64).
    for name in ["b1_2x3x4.npy", "be_f4_2x3x4.npy", "f2_2x3x4.npy", "f4_0x3.npy", "f8_scalar.npy",
                 "i8_2x3x4.npy", "v2_f4_2x3x4.npy", "v3_f4_2x3x4.npy", "fortran_f4_3x4.npy"]:
        copy("npy", os.path.join(FIX, "data", name))
    put("npy", "issue15_zero_overflow.npy", npy("|u1", "(3, 0, 5000000000000000000)", b""))
    # IDX: images, labels, float32, and issue 15's 20-byte reproducer.
    for name in ["images_5x4x3.idx3-ubyte", "labels_5.idx1-ubyte", "f4_2x2.idx"]:
        copy("idx", os.path.join(FIX, "data", name))
    put("idx", "issue15_zero_overflow.idx", bytes.fromhex("00000804000000030000000" "0c00000005b000000"))
    # CSV: byte 0 picks the options (tests/fuzz/csv_fuzz.h), the rest is the text.
    texts = {
        "header_floats": b"\x01x,y,label\n1,2,0\n3.5,-4e3,1\r\n\n-0.25, 7 ,2\n",
        "no_header": b"\x00" + b"1,2,3\n4,5,6\n",
        "quoted_semicolon": b"\x03" + b'"a";"b ""q"""\n"1";  2\n3;4\n',
        "tab": b"\x05" + b"a\tb\n1\t2\n",
        "declared_columns": b"\x09" + b"i,h0,h1,b,l\n-128,0.5,65504,true,9007199254740993\n127,-1,0,0,-5\n",
        "declared_columns_2": b"\x10" + b"255,1e38,-1e308\n0,-0.0,5\n",
        "bom_crlf": b"\x01" + b"\xef\xbb\xbfa,b\r\n1,2\r\n",
    }
    for name, text in texts.items():
        put("csv_plain", name + ".bin", text)
        put("csv_gzip", name + ".bin", text)  # top bit clear: the target gzips the text
    put("csv_gzip", "two_members_flag_split.bin", bytes([0x41]) + texts["header_floats"][1:])
    raw = gzip.compress(b"x,y\n1,2\n", mtime=0) + gzip.compress(b"3,4\n", mtime=0)
    put("csv_gzip", "raw_two_members.bin", bytes([0x81]) + raw[2:])  # top bit: raw after 1f 8b
    # safetensors: the reference file of every dtype, a small one with metadata, and a spore
    # checkpoint of Dense(2, 3) (weight [3, 2], bias [3]) as load_param_into_net expects.
    st_ref = os.path.join(FIX, "io", "reference_dtypes.safetensors")
    small = safetensors({"a": ("F32", [2], struct.pack("<2f", 1.5, -2)), "b": ("BOOL", [3], b"\x01\x00\x01")},
                        {"note": "seed"})
    ckpt = safetensors({"weight": ("F32", [3, 2], struct.pack("<6f", *range(6))),
                        "bias": ("F32", [3], struct.pack("<3f", 0, 1, 2))},
                       {"format": "spore-checkpoint", "format_version": "1", "framework": "spore",
                        "framework_version": "0.1.0"})
    for target in ["safetensors_bytes", "safetensors_file", "checkpoint"]:
        copy(target, st_ref)
        put(target, "small.safetensors", small)
        put(target, "dense_2x3.ckpt", ckpt)
    # Report JSON: the committed reports, the shapes issue 15 crashed on, and each kind's skeleton.
    reports = {
        "issue15_run_no_results.json": b'{"kind":"run","environment":{}}',
        "issue15_probe_bare.json": b'{"kind":"probe"}',
        "env_bare.json": b'{"kind":"env","schema":"spore.env-report/1","binary":{"sanitize":1}}',
        "op_matrix.json": json.dumps({"kind": "op-matrix", "schema": "spore.op-matrix/1", "device": "cpu",
                                      "dtypes": ["float32"], "rows": [{"op": "add", "cells": [
                                          {"dtype": "float32", "verdict": "observed-pass", "max_abs_err": 1e-7}]}],
                                      "counts": {"observed-pass": 1}}).encode(),
        "nested_values.json": b'{"kind":"probe","results":{"values":{"v":[[[[1]]]],"s":"x"}},"artifacts":[1]}',
    }
    # Model IR: the committed files of every version (tests/fixtures/ir/), as the target reads
    # them: byte 0 odd = a body the target seals with its SHA-256, even = the file as is.
    ir_dir = os.path.join(FIX, "ir")
    for name in sorted(os.listdir(ir_dir)):
        data = open(os.path.join(ir_dir, name), "rb").read()
        put("ir", name + ".sealed", b"\x01" + data[:-32])
        put("ir", name + ".raw", b"\x00" + data)
    # Reproducers of findings (kept as seeds so the fix stays covered): tests/fuzz/reproducers/ir/.
    rdir = os.path.join(ROOT, "tests", "fuzz", "reproducers", "ir")
    for name in sorted(os.listdir(rdir)):
        copy("ir", os.path.join(rdir, name))
    for target in ["report_show", "report_validate"]:
        for name in ["probe-01_tensor_ops.json", "run-a.json"]:
            copy(target, os.path.join(FIX, "probe", name))
        for name, data in reports.items():
            put(target, name, data)
    for name in sorted(os.listdir(os.path.join(ROOT, "schemas"))):  # schemas as inputs: the schema reader
        if name.endswith(".json"):
            copy("report_validate", os.path.join(ROOT, "schemas", name))
    # fused_elementwise programs: byte 0 picks dtype and input count (tests/fuzz/fused_program_fuzz.cc).
    programs = {
        "muladd_f32.txt": (12, "mul %0 %1; add $0 %2"),
        "gelu_chain_f32.txt": (12, "mul %0 %1; add $0 %2; gelu $1"),
        "where_cast_f16.txt": (7, "gt %0 %1; where $0 %0 %1; cast:float32 $1; relu6 $2"),
        "logical_bool.txt": (11, "logical_and %0 %1; logical_not $0"),
        "diamond_f64.txt": (3, "exp %0; mul $0 $0; sqrt $1"),
        "int_abs.txt": (10, "add %0 %1; abs $0"),
    }
    for name, (selector, text) in programs.items():
        put("fused_program", name, bytes([selector]) + text.encode())
    # Chat templates: the models' real templates and the one-construct templates of the parity
    # fixtures (tests/fixtures/templates/), as template text.
    tdir = os.path.join(FIX, "templates")
    for model in sorted(os.listdir(tdir)):
        mdir = os.path.join(tdir, model)
        if not os.path.isdir(mdir):
            continue
        for name in sorted(os.listdir(mdir)):
            path = os.path.join(mdir, name)
            if name.endswith(".jinja"):
                copy("chat_template", path)
            elif name == "tokenizer_config.json":
                text = json.load(open(path, encoding="utf-8")).get("chat_template")
                if isinstance(text, str):
                    put("chat_template", model + ".jinja", text.encode())
    features = json.load(open(os.path.join(tdir, "features.json"), encoding="utf-8"))["features"]
    for i, f in enumerate(features):
        put("chat_template", "feature_%02d.jinja" % i, f["template"].encode())



def tokenizer_seeds():
    """Seeds for the tokenizer and GGUF targets: the small trained tokenizer.json, a Mistral-style
    SentencePiece file cut down to a few tokens, texts in many scripts, and small GGUFs."""
    # The tiny tokenizer, compact and with its vocabulary cut to 250 tokens (and the merges that
    # still apply) so the seed fits scripts/fuzz.sh's -max_len of 16 KB.
    tiny = json.load(open(os.path.join(FIX, "tokenizers", "tiny", "tokenizer.json"), encoding="utf-8"))
    vocab = {t: i for t, i in tiny["model"]["vocab"].items() if i < 250}
    tiny["model"]["vocab"] = vocab
    tiny["model"]["merges"] = [m for m in tiny["model"]["merges"]
                               if m[0] in vocab and m[1] in vocab and m[0] + m[1] in vocab]
    tiny["added_tokens"] = [dict(a, id=250 + k) for k, a in enumerate(tiny["added_tokens"])]
    tiny["post_processor"]["special_tokens"] = {
        name: dict(v, ids=[250 + [a["content"] for a in tiny["added_tokens"]].index(name)])
        for name, v in tiny["post_processor"]["special_tokens"].items()}
    put("tokenizer_json", "tiny.json", json.dumps(tiny, ensure_ascii=False, separators=(",", ":")).encode())
    spm = {"version": "1.0", "added_tokens": [
        {"id": 0, "content": "<unk>", "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False},
        {"id": 1, "content": "<s>", "special": True, "normalized": False, "lstrip": False, "rstrip": False, "single_word": False}],
        "normalizer": {"type": "Sequence", "normalizers": [{"type": "Prepend", "prepend": "\u2581"},
                       {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                    {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": True, "byte_fallback": True,
                  "vocab": {"<unk>": 0, "<s>": 1, "<0xE4>": 2, "\u2581": 3, "a": 4, "b": 5, "\u2581a": 6, "ab": 7, "\u2581ab": 8},
                  "merges": ["\u2581 a", "a b", "\u2581a b"]}}
    put("tokenizer_json", "spm_small.json", json.dumps(spm).encode())
    texts = ["Hello world", "深度学习 日本語 한국어", "👨‍👩‍👧‍👦 🇯🇵 👍🏽", "<|special|>[MASK] word <rs>  NormTok",
             "def f(x):\n\treturn x  # 3.14159", "e\u0301 \ufb01 \uff21", "مرحبا नमस्ते"]
    for k, t in enumerate(texts):
        put("tokenizer_encode", f"text{k}.txt", t.encode())
    put("tokenizer_encode", "invalid_utf8.bin", b"ab\xc3(\xff\xe4\xbd")

    def gguf(kvs, tensors):
        def s(x):
            b = x.encode()
            return struct.pack("<Q", len(b)) + b
        out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
        for key, typ, payload in kvs:
            out += s(key) + struct.pack("<I", typ) + payload
        data = b""
        for name, typ, dims, payload in tensors:
            while len(data) % 32:
                data += b"\0"
            out += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
            out += struct.pack("<IQ", typ, len(data))
            data += payload
        while len(out) % 32:
            out += b"\0"
        return out + data

    def strs(xs):
        return struct.pack("<IQ", 8, len(xs)) + b"".join(struct.pack("<Q", len(x.encode())) + x.encode() for x in xs)

    put("gguf", "tensors.gguf", gguf([("general.architecture", 8, struct.pack("<Q", 5) + b"llama"),
                                      ("general.alignment", 4, struct.pack("<I", 32))],
                                     [("w", 0, [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
                                      ("q", 8, [32], b"\1" * 34)]))
    put("gguf", "gpt2_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 4) + b"gpt2"),
                                             ("tokenizer.ggml.tokens", 9, strs(["H", "e", "He", "\u0120", "<s>"])),
                                             ("tokenizer.ggml.merges", 9, strs(["H e"])),
                                             ("tokenizer.ggml.token_type", 9, struct.pack("<IQ5i", 5, 5, 1, 1, 1, 1, 3))], []))
    put("gguf", "llama_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 5) + b"llama"),
                                              ("tokenizer.ggml.tokens", 9, strs(["<unk>", "<s>", "<0xE4>", "\u2581", "a", "\u2581a"])),
                                              ("tokenizer.ggml.scores", 9, struct.pack("<IQ6f", 6, 6, 0, 0, 0, -1, -2, -0.5)),
                                              ("tokenizer.ggml.token_type", 9, struct.pack("<IQ6i", 5, 6, 2, 3, 6, 1, 1, 1)),
                                              ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 1))], []))
    # A pre-tokenizer of several regexes from the table (NOTE [GGUF pre-tokenizers]) and a BERT
    # WordPiece vocabulary ("\u2581" marks word-initial pieces).
    put("gguf", "gpt2_deepseek_llm_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 4) + b"gpt2"),
                                                          ("tokenizer.ggml.pre", 8, struct.pack("<Q", 12) + b"deepseek-llm"),
                                                          ("tokenizer.ggml.tokens", 9, strs(["H", "e", "He", "\u0120", "<s>"])),
                                                          ("tokenizer.ggml.merges", 9, strs(["H e"]))], []))
    # The raw UTF-8 "whitespace" vocabulary with a byte token, and the hand-split kimi-k2 row.
    put("gguf", "whitespace_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 10) + b"whitespace"),
                                                   ("tokenizer.ggml.pre", 8, struct.pack("<Q", 10) + b"whitespace"),
                                                   ("tokenizer.ggml.tokens", 9, strs(["H", "e", "He", "<0x2C>", "\u17b6"])),
                                                   ("tokenizer.ggml.merges", 9, strs(["H e"])),
                                                   ("tokenizer.ggml.token_type", 9, struct.pack("<IQ5i", 5, 5, 1, 1, 1, 6, 1))], []))
    put("gguf", "gpt2_kimi_k2_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 4) + b"gpt2"),
                                                     ("tokenizer.ggml.pre", 8, struct.pack("<Q", 7) + b"kimi-k2"),
                                                     ("tokenizer.ggml.tokens", 9, strs(["H", "e", "He", "\u0120", "<s>"])),
                                                     ("tokenizer.ggml.merges", 9, strs(["H e"]))], []))
    put("gguf", "bert_tokenizer.gguf", gguf([("tokenizer.ggml.model", 8, struct.pack("<Q", 4) + b"bert"),
                                             ("tokenizer.ggml.tokens", 9, strs(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "\u2581he", "llo", "\u2581,"])),
                                             ("tokenizer.ggml.token_type", 9, struct.pack("<IQ7i", 5, 7, 3, 3, 3, 3, 1, 1, 1)),
                                             ("tokenizer.ggml.unknown_token_id", 4, struct.pack("<I", 1)),
                                             ("tokenizer.ggml.cls_token_id", 4, struct.pack("<I", 2)),
                                             ("tokenizer.ggml.seperator_token_id", 4, struct.pack("<I", 3))], []))


def mindspore_seeds():
    """MindSpore 2.10's own files (tests/fixtures/mindir, NOTE [MindIR], NOTE [MindSpore checkpoints])."""
    d = os.path.join(FIX, "mindir")
    for name in ["fp16_linear.mindir", "fp16_linear.v1.mindir", "mlp.mindir", "cnn.mindir", "misc.mindir", "addnet.mindir", "twoout.mindir", "cnn_same.mindir"]:
        copy("mindir", os.path.join(d, name))
    for name in ["fp16_linear.ckpt", "mlp.ckpt", "cnn.ckpt", "dtypes.ckpt"]:
        copy("ms_ckpt", os.path.join(d, name))
def gate_response_seeds():
    """spore gate's response readers: byte 0 odd is an SSE stream (its upper bits how it is cut),
    even a JSON answer; the streams and answers are OpenAI's shapes, right and slightly wrong."""
    def chunk(content, finish=None):
        return json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                           "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": finish}]})
    usage = json.dumps({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m",
                        "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})
    sse = "".join("data: %s\n\n" % d for d in [chunk(""), chunk("Red"), chunk(", blue", "stop"), usage, "[DONE]"])
    put("gate_response", "sse_good", bytes([0x03]) + sse.encode())
    put("gate_response", "sse_crlf_cut", bytes([0x07]) + (": ping\r\n" + sse.replace("\n\n", "\r\n\r\n")).encode())
    put("gate_response", "sse_no_done", bytes([0x01]) + ("data: %s\n\nevent: x\ndata: %s\n" % (chunk("a", "stop"), usage)).encode())
    chat = {"id": "c1", "object": "chat.completion", "created": 1, "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}
    put("gate_response", "json_chat", b"\x00" + json.dumps(chat).encode())
    put("gate_response", "json_completion", b"\x00" + json.dumps(
        {"id": "x", "object": "text_completion", "created": 1, "model": "m",
         "choices": [{"index": 0, "text": " Paris", "finish_reason": "length"}],
         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}).encode())
    put("gate_response", "json_models", b"\x00" + json.dumps(
        {"object": "list", "data": [{"id": "m", "object": "model", "created": 0, "owned_by": "me"}]}).encode())
    put("gate_response", "json_error", b"\x00" + json.dumps(
        {"error": {"message": "bad", "type": "invalid_request_error", "param": None, "code": None}}).encode())


def hostile_request_seeds():
    """Issue 25's hostile bodies for serve_request (byte 0 odd: chat, even: completions): nesting far
    past the one depth bound in every field (kept under scripts/fuzz.sh's -max_len 16384), the
    bound's edge, max_(completion_)tokens 0 (a contract break found by the fuzzer), 129 tools; and
    chat templates that nest a value in itself in a loop (NOTE [Hostile requests])."""
    user = '{"role":"user","content":"a"}'

    def deep(n, inner="1"):
        return "[" * n + inner + "]" * n

    def tool(params):
        return '{"type":"function","function":{"name":"f","parameters":%s}}' % params

    seeds = {
        "deep_tools": (1, '{"messages":[%s],"tools":%s}' % (user, deep(5000))),
        "deep_tool_schema": (1, '{"messages":[%s],"tools":[%s]}' % (user, tool('{"a":' * 2000 + "1" + "}" * 2000))),
        "deep_tool_calls": (1, '{"messages":[{"role":"assistant","tool_calls":[{"type":"function","function":'
                               '{"name":"f","arguments":%s}}]}]}' % deep(5000)),
        "deep_messages": (1, '{"messages":%s}' % deep(7000)),
        "deep_stop": (0, '{"prompt":"a","stop":%s}' % deep(7000, '"x"')),
        "depth_64_tools": (1, '{"messages":[%s],"tools":[%s]}' % (user, tool(deep(59)))),
        "depth_65_tools": (1, '{"messages":[%s],"tools":[%s]}' % (user, tool(deep(60)))),
        "max_completion_tokens_zero": (0, '{"prompt":"a","max_completion_tokens":0}'),
        "max_tokens_zero_chat": (1, '{"messages":[%s],"max_tokens":0,"n":0,"top_k":-1}' % user),
        "many_tools": (1, '{"messages":[%s],"tools":[%s]}' % (
            user, ",".join('{"type":"function","function":{"name":"f%d"}}' % i for i in range(129)))),
        "tool_choice": (1, '{"messages":[%s],"tools":[%s],"tool_choice":"required"}'
                           % (user, '{"type":"function","function":{"name":"f"}}')),
    }
    for name, (route, body) in seeds.items():
        put("serve_request", name, bytes([route]) + body.encode())
    loop = "{%% set ns = namespace(%s) %%}{%% for i in range(100000) %%}%s{%% endfor %%}%s"
    templates = {
        "value_nesting_list": loop % ("x=[]", "{% set ns.x = [ns.x] %}", "{{ ns.x }}"),
        "value_nesting_namespace": loop % ("n=none", "{% set ns.n = namespace(a=ns.n) %}", "{{ ns.n }}"),
        "value_nesting_loop": loop % ("x=[]", "{% for y in [ns.x, ns.x] %}{% if loop.last %}{% set ns.x = [loop] %}"
                                              "{% endif %}{% endfor %}", ""),
        "value_nesting_dict": loop % ("x={}", "{% set ns.x = {'a': ns.x} %}", "{{ ns.x|tojson }}"),
    }
    for name, text in templates.items():
        put("chat_template", name + ".jinja", text.encode())


if __name__ == "__main__":
    main()
    tokenizer_seeds()
    mindspore_seeds()
    gate_response_seeds()
    hostile_request_seeds()
