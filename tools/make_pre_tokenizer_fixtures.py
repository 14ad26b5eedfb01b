#!/usr/bin/env python3
"""tests/fixtures/tokenizers/llama_pre_renamed.json: llama.cpp's own ids for the pre-tokenizers
that no vocabulary test of its tree covers and that llama.cpp runs through hand-written
splitters (NOTE [GGUF pre-tokenizers]): "kimi-k2" and "afmoe".

For each name, Llama 3's vocabulary test file (models/ggml-vocab-llama-bpe.gguf of the llama.cpp
tree in llama-cpp-python's sdist: byte-level BPE with merges, as both models' GGUFs are, and with
tokens of up to three digits, so that digit grouping shows in the ids) is copied with
`tokenizer.ggml.pre` set to that name (gguf-new-metadata --pre-tokenizer), and llama.cpp's
`llama-tokenize --ids --no-bos` (built from the same sdist) encodes every text of its .inp
file plus texts aimed at the two splitters (digit runs, Han next to other scripts, upper-case
runs with contractions). tests/nlp/tokenizer_llama_vocab_test.cc rebuilds the same renamed
vocabulary from outputs/llama-vocab/ggml-vocab-llama-bpe.gguf and must give these ids.

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
NAMES = ["kimi-k2", "afmoe"]
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


def reference_tokenizer(base, splits):
    """Hugging Face `tokenizers` over the GGUF's byte-level vocabulary and merges."""
    import gguf
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    r = gguf.GGUFReader(base)
    tokens = r.fields["tokenizer.ggml.tokens"].contents()
    merges = [tuple(m.split(" ", 1)) for m in r.fields["tokenizer.ggml.merges"].contents()]
    tok = Tokenizer(models.BPE({t: i for i, t in enumerate(tokens)}, merges, ignore_merges=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(x), "isolated") for x in splits] +
        [pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    return tok
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
]


def main():
    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"])
    # tokenization does not depend on the SIMD level: any build of the sdist will do, the
    # perplexity tool's (build/peers/llama-build) when it is there
    tokenize = os.path.join(PEERS, "llama-build", "bin", "llama-tokenize")
    if not os.path.exists(tokenize):
        tokenize = llama_tool(PEERS, [sys.executable, "-m", "pip"], "llama-tokenize")
    base = os.path.join(src, "models", "ggml-vocab-llama-bpe.gguf")
    sep = "\n__ggml_vocab_test__\n"
    texts = open(base + ".inp", encoding="utf-8").read().split(sep) + EXTRA
    new_metadata = os.path.join(os.path.dirname(sys.executable), "gguf-new-metadata")
    out = {"what": "ids: Hugging Face tokenizers with each model's own splits over Llama 3's vocabulary test "
                   "file; llama_cpp_ids: llama-tokenize --ids --no-bos on that file renamed to the pre-tokenizer",
           "made_by": "tools/make_pre_tokenizer_fixtures.py",
           "llama_cpp": os.path.basename(os.path.dirname(os.path.dirname(src))),
           "base": "ggml-vocab-llama-bpe.gguf", "base_sha256": sha256_of(base), "cases": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for name in NAMES:
            renamed = os.path.join(tmp, name + ".gguf")
            subprocess.run([new_metadata, "--pre-tokenizer", name, "--force", base, renamed], check=True,
                           capture_output=True)
            cases = []
            reference = reference_tokenizer(base, REFERENCE_SPLITS[name])
            for text in texts:
                path = os.path.join(tmp, "text.txt")
                with open(path, "wb") as f:
                    f.write(text.encode("utf-8"))
                r = subprocess.run([tokenize, "-m", renamed, "-f", path, "--ids", "--no-bos", "--log-disable"],
                                   capture_output=True, text=True, check=True)
                cases.append({"text": text, "ids": reference.encode(text, add_special_tokens=False).ids,
                              "llama_cpp_ids": json.loads(r.stdout.strip().splitlines()[-1])})
            out["cases"][name] = cases
            same = sum(c["ids"] == c["llama_cpp_ids"] for c in cases)
            print(f"{name}: {len(cases)} texts, llama.cpp's splitter agrees with the reference on {same}")
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"wrote {os.path.relpath(OUT, ROOT)}")


if __name__ == "__main__":
    main()
