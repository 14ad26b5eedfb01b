#!/usr/bin/env python3
"""Writes the tokenizer parity fixtures (tests/fixtures/tokenizers/<name>_cases.json) and the
small trained tokenizer tests/fixtures/tokenizers/tiny/tokenizer.json.

Reference ids and decodes come from Hugging Face `tokenizers` (PyPI), which reads the committed
tokenizer.json files directly. Run with the peers' venv:
    /work/main/.venv-peers/bin/python tools/make_tokenizer_fixtures.py
Each case: {"text", "add_special_tokens", "ids", "decoded", "decoded_skip_special"}: the decodes
are tokenizer.decode(ids, skip_special_tokens=False / True) of the same ids.
"""
import json
import os
import random

from tokenizers import Tokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIX = os.path.join(ROOT, "tests", "fixtures", "tokenizers")


def corpus():
    texts = [
        "", " ", "Hello world", " Hello world", "Hello, World! How are you?",
        "The quick brown fox jumps over the lazy dog.",
        "I'm sure they'll say it's fine, we've done it, you'd agree, isn't it? DON'T SHOUT",
        # Chinese, Japanese, Korean, Arabic, Hindi, Thai, Russian, Greek
        "深度学习框架在昇腾处理器上运行大模型。", "今天天气很好，我们去公园散步吧！",
        "日本語のテキストとカタカナ、ひらがな、漢字を混ぜた文章です。",
        "한국어 문장도 토큰화해야 합니다. 안녕하세요!",
        "مرحبا بالعالم، هذا نص عربي للاختبار.", "नमस्ते दुनिया, यह हिंदी का परीक्षण है।",
        "ภาษาไทยไม่มีช่องว่างระหว่างคำ", "Привет, мир! Ελληνικά κείμενα.",
        # emoji: ZWJ families, flags, skin tones, keycaps, variation selectors
        "👨‍👩‍👧‍👦 family", "🇯🇵🇺🇸🇩🇪 flags", "👍🏽👋🏿 tones", "1️⃣ keycap ❤️ heart ☺︎",
        "🦙.cpp and 🤗 transformers 🚀🚀🚀", "emoji at end 😀",
        # combining marks and normalisation
        "e\u0301 cafe\u0301 caf\u00e9 A\u030a \u212b \ufb01 \u2460 \uff21\uff22 \u1e9b\u0323",
        "Zalgo: Z\u0351\u036b\u0343\u036a\u0302a\u0310\u0346l\u0350g\u0352o\u0489",
        # code
        "def foo(x):\n    return x ** 2  # square\n\n\tprint(foo(3))\n",
        "for (int i = 0; i < n; ++i) { a[i] = b[i] * c; }\r\n",
        "<div class=\"x\">&amp; &lt;tag&gt;</div> {\"key\": [1, 2, 3]}",
        # numbers
        "3.14159265358979323846264338327950288419716939937510",
        "1234567890 12345678901234567890 0.000001 -42 1e-9 1,000,000",
        # whitespace runs
        "a  b   c    d\te\t\tf\ng\n\nh\r\ni\r\n\r\nj\u00a0k\u3000l\u2009m\u200bn",
        "   leading", "trailing   ", "\n\n\n", "\t", " \n \n ", "  \t\n  x  \t\n  ",
        "\u2028line\u2029para\u0085nel\x0bvt\x0cff",
        # looks like special tokens
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
        "<|endoftext|>text<|endoftext|>", "<s> hello </s> <unk>", "<s>hello</s>",
        "<|im_start|> spaced <|im_end|>", "<|im_start", "< s >", "<think>\n\n</think>\n\n",
        "<tool_call>{\"name\": \"f\"}</tool_call>", "<|fim_prefix|>a<|fim_suffix|>b<|fim_middle|>",
        "[INST] Hello [/INST]", "<0x41> <0xFF>",
        # mixed
        "Mixed 中文 and English 和 日本語 with 한국어 and numbers 123.",
        "Don't you love 🤗 Transformers? We sure do.",
        "Ḁ\u0300 \U0001d54f \U00010348 \U0001f9d1\u200d\U0001f4bb",
    ]
    inp = os.path.join(FIX, "llama2-gguf", "ggml-vocab-llama-spm.gguf.inp")
    with open(inp, encoding="utf-8") as f:
        texts += f.read().split("\n__ggml_vocab_test__\n")
    rng = random.Random(11)
    pieces = [t for t in texts if t]
    doc = []
    while sum(len(p) for p in doc) < 20000:
        doc.append(rng.choice(pieces))
        doc.append(rng.choice([" ", "\n", "\n\n", "  ", "\t", ""]))
    texts.append("".join(doc))
    seen, out = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


FLAG_TEXTS = [
    "a [MASK] b", "a   [MASK]   b", "[MASK]x", "x<rs>   y", "<rs>\n\nz", "word words sword word_ word",
    "(word) word, 1word", "NormTok normtok ＮｏｒｍＴｏｋ", "<|special|><|special|>  <|special|>x",
    "wordword", " word ", "a\u3000[MASK]\u3000b", "ｆｕｌｌｗｉｄｔｈ ﬁ ①",
]


def make_tiny(texts):
    """A small byte-level BPE trained here, with added tokens of every flag: the encoder's fuzz
    target and the added-token tests use it."""
    from tokenizers import AddedToken, models, normalizers, pre_tokenizers, decoders, trainers
    from tokenizers import Regex, processors
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\p{N}{1,3}| ?\p{L}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"), "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens([AddedToken("<|special|>", special=True, normalized=False),
                            AddedToken("[MASK]", lstrip=True, special=True, normalized=False)])
    tok.add_tokens([AddedToken("<rs>", rstrip=True, normalized=False),
                    AddedToken("word", single_word=True, normalized=False),
                    AddedToken("NormTok", normalized=True)])
    bos = tok.token_to_id("<|special|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|special|> $A [MASK]", special_tokens=[("<|special|>", bos), ("[MASK]", tok.token_to_id("[MASK]"))])
    os.makedirs(os.path.join(FIX, "tiny"), exist_ok=True)
    tok.save(os.path.join(FIX, "tiny", "tokenizer.json"))


def make_variants(texts):
    """Two more small trained tokenizers for the components the real files do not use:
    tiny_metaspace: the Metaspace pre-tokenizer (prepend_scheme "first", split) and decoder, NFKC,
      byte fallback with <0xNN> tokens in the model vocabulary, fused unk;
    tiny_split: char-level BPE with unk and no decoder (tokens joined by spaces), NFD + Strip +
      Replace(regex) + Lowercase, Split in the Removed / MergedWithPrevious / MergedWithNext /
      Contiguous behaviours (one inverted), Digits."""
    from tokenizers import AddedToken, models, normalizers, pre_tokenizers, decoders, trainers, Regex
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="\u2581", prepend_scheme="first")])
    latin = [t for t in texts if all(ord(c) < 0x250 for c in t)]
    tok.train_from_iterator(latin, trainers.BpeTrainer(vocab_size=400, show_progress=False,
                                                       special_tokens=["<unk>", "<s>"]))
    j = json.loads(tok.to_str())
    vocab = j["model"]["vocab"]
    for b in range(256):
        vocab.setdefault("<0x%02X>" % b, len(vocab))
    os.makedirs(os.path.join(FIX, "tiny_metaspace"), exist_ok=True)
    with open(os.path.join(FIX, "tiny_metaspace", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(j, f, ensure_ascii=False)

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Strip(),
                                           normalizers.Replace(Regex(r"\d{4}"), "####"),
                                           normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("-+"), "removed"),
        pre_tokenizers.Split(Regex("[.,!?]"), "merged_with_previous"),
        pre_tokenizers.Split(" ", "merged_with_next"),
        pre_tokenizers.Split(Regex("[aeiou]"), "contiguous", invert=True),
        pre_tokenizers.Digits(individual_digits=False)])
    tok.train_from_iterator(latin, trainers.BpeTrainer(vocab_size=300, show_progress=False,
                                                       special_tokens=["[UNK]"]))
    tok.add_special_tokens([AddedToken("[CLS]", special=True)])
    os.makedirs(os.path.join(FIX, "tiny_split"), exist_ok=True)
    tok.save(os.path.join(FIX, "tiny_split", "tokenizer.json"))

    # SmolLM2's structure (Digits one by one, then ByteLevel with GPT-2's regex): the JSON path and,
    # rebuilt as a GGUF with tokenizer.ggml.pre = "smollm" by the test, the GGUF path.
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                 pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=700, show_progress=False,
                                                       initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                                       special_tokens=["<|endoftext|>", "<|im_start|>"]))
    os.makedirs(os.path.join(FIX, "tiny_smollm"), exist_ok=True)
    tok.save(os.path.join(FIX, "tiny_smollm", "tokenizer.json"))


def main():
    texts = corpus()
    make_tiny(texts)
    make_variants(texts)
    for name in ["qwen3", "mistral", "tiny", "tiny_metaspace", "tiny_split", "tiny_smollm"]:
        tok = Tokenizer.from_file(os.path.join(FIX, name, "tokenizer.json"))
        if name.startswith("tiny"):
            texts = corpus() + FLAG_TEXTS + ["a-b--c.d, e! 2024-12-03 x1234y", "  Hello  World  ", "[CLS] a[CLS]b"]
        cases = []
        for t in texts:
            for add in (False, True):
                ids = tok.encode(t, add_special_tokens=add).ids
                cases.append({"text": t, "add_special_tokens": add, "ids": ids,
                              "decoded": tok.decode(ids, skip_special_tokens=False),
                              "decoded_skip_special": tok.decode(ids, skip_special_tokens=True)})
        path = os.path.join(FIX, f"{name}_cases.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"source": "tokenizers " + __import__("tokenizers").__version__,
                       "cases": cases}, f, ensure_ascii=False, indent=0)
        print(path, len(cases))


if __name__ == "__main__":
    main()
