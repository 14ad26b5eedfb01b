#!/usr/bin/env python3
"""tests/fixtures/tokenizers/llama_pre_renamed.json: reference ids for the GGUF pre-tokenizers that
no vocabulary test of llama.cpp's tree covers and that llama.cpp runs through hand-written code
(NOTE [GGUF pre-tokenizers]): "kimi-k2" and "afmoe" (byte-level BPE), and the "whitespace"
vocabulary (raw UTF-8 BPE; llama.cpp's converter writes it for JinaBERT models whose
tokenizer.json pre-tokenizes with Hugging Face's Whitespace).

For each, a vocabulary test file of the llama.cpp tree in llama-cpp-python's sdist is copied with
`tokenizer.ggml.pre` (and, for whitespace, `tokenizer.ggml.model`) set to the name: Llama 3's
ggml-vocab-llama-bpe.gguf (byte-level BPE with merges, as both models' GGUFs are, with tokens of
up to three digits so that digit grouping shows in the ids) for kimi-k2 and afmoe, Gemma 4's
ggml-vocab-gemma-4.gguf (raw UTF-8 BPE with merges and <0xXX> byte tokens) for whitespace. Every
text of its .inp file plus texts aimed at these splitters is encoded twice: by Hugging Face
`tokenizers` over the same vocabulary and merges with the model's own split (the reference: "ids")
and by llama.cpp's `llama-tokenize --ids --no-bos` on the renamed file ("llama_cpp_ids").
tests/nlp/tokenizer_llama_vocab_test.cc rebuilds each renamed vocabulary from
outputs/llama-vocab/ and must give the reference ids.

    .venv-peers/bin/python tools/make_pre_tokenizer_fixtures.py
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from compare_llama_cpp import sha256_of  # noqa: E402
from llama_cpp_sdist import llama_cpp_source, llama_tool  # noqa: E402

PEERS = os.path.join(ROOT, "build", "peers")
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "llama_pre_renamed.json")
# name: (the base vocabulary test file, the tokenizer.ggml.model to write, the reference splits;
# None: Hugging Face's Whitespace pre-tokenizer over raw UTF-8)
NAMES = {"kimi-k2": ("ggml-vocab-llama-bpe.gguf", "gpt2"), "afmoe": ("ggml-vocab-llama-bpe.gguf", "gpt2"),
         "whitespace": ("ggml-vocab-gemma-4.gguf", "whitespace")}
# Each name's splits as its model's own tokenizer defines them, run by Hugging Face `tokenizers`
# (Oniguruma) as Split(..., "isolated") in order before the byte-level mapping: the reference.
# Kimi K2's is tokenization_kimi.py's tiktoken pattern (quoted in llama.cpp's unicode.cpp), with
# class intersections (&&) that Oniguruma runs as written; AFMoE's are the digit grouping (runs of
# digits in threes from the right), the CJK and Asian scripts, and DeepSeek V3's word rule, as
# llama.cpp's llama-vocab.cpp lists them (its digit splitter written out as the regex it
# documents).
REFERENCE_SPLITS = {
    "kimi-k2": [
        r"[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+"
        r"[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|"
        r"\s*[\r\n]+|\s+(?!\S)|\s+"],
    "afmoe": [
        r"\p{N}{1,3}(?=(?:\p{N}{3})*(?!\p{N}))",
        "[\u4E00-\u9FFF\u3400-\u4DBF\u8C48-\uFAFF\u3040-\u309F\u30A0-\u30FF\uFF65-\uFF9F\u2F00-\u2FDF\u0E40-\u0E7F"
        "\u0E80-\u0EFF\u1780-\u17FF\u1000-\u109F\uAA60-\uAA7F\uA9E0-\uA9FF\uAC00-\uD7AF\u1100-\u11FF]+",
        r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|"
        r"\s*[\r\n]+|\s+(?!\S)|\s+"],
}


def reference_tokenizer(r, name):
    """Hugging Face `tokenizers` over the GGUF's (a GGUFReader) vocabulary and merges with the model's
    own split."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    types = r.fields["tokenizer.ggml.token_type"].contents()
    # at the first space after the first character, as llama.cpp reads a merge
    merges = [(m[:m.index(" ", 1)], m[m.index(" ", 1) + 1:]) for m in r.fields["tokenizer.ggml.merges"].contents()]
    vocab = {t: i for i, t in enumerate(tokens)}
    if name == "whitespace":
        tok = Tokenizer(models.BPE(vocab, merges, byte_fallback=True, ignore_merges=False))
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Fuse()])
        # llama.cpp's control (3) and user-defined (4) tokens are matched whole
        tok.add_tokens([AddedToken(t, special=ty == 3, normalized=False) for t, ty in zip(tokens, types) if ty in (3, 4)])
        return tok
    tok = Tokenizer(models.BPE(vocab, merges, ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(x), "isolated") for x in REFERENCE_SPLITS[name]] +
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok


def renamed_copy(r, out, pre, model):
    """The vocabulary file (a GGUFReader) with tokenizer.ggml.pre and tokenizer.ggml.model replaced,
    all else as it is."""
    import gguf

    w = gguf.GGUFWriter(out, r.fields["general.architecture"].contents())
    for key, field in r.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        value = {"tokenizer.ggml.pre": pre, "tokenizer.ggml.model": model}.get(key, field.contents())
        sub = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(key, value, field.types[0], sub)
    if "tokenizer.ggml.pre" not in r.fields:
        w.add_tokenizer_pre(pre)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


EXTRA = [
    "1 12 123 1234 12345 123456 1234567 12345678901234567890",
    "Pay $1,234,567.89 by 2024-12-31, or 0.5%.",
    "我想在Kimi上跑DeepSeek和Qwen模型。模型很大, but 速度快!",
    "東京タワーは333メートルです。서울은 한국의 수도입니다.",
    "ภาษาไทย ພາສາລາວ ភាសាខ្មែរ မြန်မာ",
    "HELLO'S WORLD'LL BE FINE; I'M SURE YOU'VE SEEN IT'D",
    "camelCaseWords and XMLHttpRequest and iPhone15Pro",
    "  leading spaces\n\n\ttabs\r\nwindows line\n   ",
    "naïve café Ελληνικά Кириллица עִבְרִית",
    "emoji 🦙🤗 and symbols ©®™ ±×÷ ∑∫",
    "and  99 and\t\t5",  # whitespace runs before digits: llama.cpp's AFMoE splitter glues them on
    "hello,world! don't stop-me now... (ok)",  # punctuation inside a word: Whitespace splits it off
]


def main():
    import gguf

    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"])
    # tokenization does not depend on the SIMD level: any build of the sdist will do, the
    # perplexity tool's (build/peers/llama-build) when it is there
    tokenize = os.path.join(PEERS, "llama-build", "bin", "llama-tokenize")
    if not os.path.exists(tokenize):
        tokenize = llama_tool(PEERS, [sys.executable, "-m", "pip"], "llama-tokenize")
    sep = "\n__ggml_vocab_test__\n"
    out = {"what": "ids: Hugging Face tokenizers with each model's own split over a vocabulary test file of "
                   "llama.cpp's tree; llama_cpp_ids: llama-tokenize --ids --no-bos on that file renamed",
           "made_by": "tools/make_pre_tokenizer_fixtures.py",
           "llama_cpp": os.path.basename(os.path.dirname(os.path.dirname(src))), "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name, (base_name, model) in NAMES.items():
            base = os.path.join(src, "models", base_name)
            texts = open(base + ".inp", encoding="utf-8").read().split(sep) + EXTRA
            renamed = os.path.join(tmp, name + ".gguf")
            reader = gguf.GGUFReader(base)  # read once for both uses
            renamed_copy(reader, renamed, name, model)
            cases = []
            reference = reference_tokenizer(reader, name)
            for text in texts:
                path = os.path.join(tmp, "text.txt")
                with open(path, "wb") as f:
                    f.write(text.encode("utf-8"))
                r = subprocess.run([tokenize, "-m", renamed, "-f", path, "--ids", "--no-bos", "--log-disable"],
                                   capture_output=True, text=True, check=True)
                cases.append({"text": text, "ids": reference.encode(text, add_special_tokens=False).ids,
                              "llama_cpp_ids": json.loads(r.stdout.strip().splitlines()[-1])})
            out["cases"][name] = {"base": base_name, "base_sha256": sha256_of(base), "model": model, "texts": cases}
            same = sum(c["ids"] == c["llama_cpp_ids"] for c in cases)
            print(f"{name}: {len(cases)} texts, llama.cpp agrees with the reference on {same}")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
