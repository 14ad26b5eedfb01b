#!/usr/bin/env python3
"""A SentencePiece Unigram tokenizer (T5's kind: llama.cpp's vocabulary type "ugm", GGUF
tokenizer.ggml.model "t5") in the forms users have it, with its own encodings as references:
tests/fixtures/tokenizers/t5_ugm/, from a spiece.model trained here by `sentencepiece` (Unigram,
nmt_nfkc normalisation: a precompiled charsmap, dummy prefix, extra whitespace removed;
deterministic; not kept: the GGUF and tokenizer.json carry all of it):
  model.gguf       a tiny random T5 (transformers) with that tokenizer, written by llama.cpp's own
                   convert_hf_to_gguf.py (pinned sdist, tools/llama_convert.py): tokens, scores,
                   types, add_space_prefix, remove_extra_whitespaces, precompiled_charsmap
  tokenizer.json   transformers' T5Converter conversion of spiece.model (Unigram model,
                   Precompiled normaliser, Metaspace pre-tokenizer), as Hugging Face repos ship it
  cases.json       texts and the ids SentencePiece itself gives them (`spm_ids`) and Hugging Face
                   `tokenizers` gives them from tokenizer.json (`hf_ids`), without special tokens

Rerun:  .venv-peers/bin/python tools/make_ugm_fixtures.py   (scripts/install-py-peers.sh nlp torch)
"""
import io
import json
import os
import shutil
import sys
import tempfile

import sentencepiece as spm

from llama_convert import convert_with_llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizers", "t5_ugm")

TRAIN = """Translate English to German: The house is wonderful. Das Haus ist wunderbar.
Summarize: Spore runs models on small machines; whether a model loads depends on the loader.
Café, naïve, résumé, façade, jalapeño, Zürich, São Paulo, Kraków, Ångström.
Numbers: 0 1 2 3 4 5 6 7 8 9 10 42 100 2026 3.14159 1,000,000.
Full-width forms: ＡＢＣ ａｂｃ １２３ ｶﾀｶﾅ, ligatures: ﬁnance ﬂow, superscripts: x² y³.
Questions? Answers! Quotes "like this" and 'this'; brackets (a) [b] {c}; email@example.com.
The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
"""

CASES = [
    "Hello world",
    "Translate English to German: The house is wonderful.",
    "  leading and   extra    spaces  ",
    "Café naïve Zürich Ångström",
    "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３ and ｶﾀｶﾅ",
    "ﬁnance ﬂow x² y³",
    "unseen: 你好 😀 ☃",
    "tabs\tand\nnewlines\r\nhere",
    "3.14159 and 1,000,000 and 2026",
    "",
    " ",
    "email@example.com (a) [b] {c}",
    "e\u0301 (e + combining acute) vs é",
]


def main():
    import tokenizers
    import transformers
    os.makedirs(OUT, exist_ok=True)
    model = io.BytesIO()
    lines = [line for line in TRAIN.splitlines() if line] * 30
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="unigram", vocab_size=150,
        character_coverage=0.9995, normalization_rule_name="nmt_nfkc", num_threads=1, minloglevel=2,
        unk_id=2, bos_id=-1, eos_id=1, pad_id=0, seed_sentencepiece_size=100000, shuffle_input_sentence=False)
    work = tempfile.mkdtemp()
    spiece = os.path.join(work, "spiece.model")
    with open(spiece, "wb") as f:
        f.write(model.getvalue())
    sp = spm.SentencePieceProcessor(model_file=spiece)

    with tempfile.TemporaryDirectory() as tmp:
        import torch
        torch.manual_seed(0)
        cfg = transformers.T5Config(vocab_size=sp.vocab_size(), d_model=8, d_kv=4, d_ff=16, num_layers=1,
                                    num_heads=2, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
        transformers.T5ForConditionalGeneration(cfg).save_pretrained(tmp, safe_serialization=True)
        shutil.copy(spiece, os.path.join(tmp, "spiece.model"))
        convert_with_llama_cpp(tmp, os.path.join(OUT, "model.gguf"), outtype="f16")

    # transformers' own SentencePiece -> tokenizer.json conversion for T5 (T5Converter), given the
    # three things it reads of a slow tokenizer.
    from transformers.convert_slow_tokenizer import T5Converter

    class SlowT5:
        vocab_file = spiece
        _extra_ids = 0

        def convert_tokens_to_ids(self, token):
            return sp.piece_to_id(token)

    T5Converter(SlowT5()).converted().save(os.path.join(OUT, "tokenizer.json"))
    hf = tokenizers.Tokenizer.from_file(os.path.join(OUT, "tokenizer.json"))
    cases = [{"text": t, "spm_ids": sp.encode(t), "hf_ids": hf.encode(t, add_special_tokens=False).ids} for t in CASES]
    versions = {"sentencepiece": spm.__version__, "transformers": transformers.__version__,
                "tokenizers": tokenizers.__version__}
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"made_by": "tools/make_ugm_fixtures.py", "versions": versions, "cases": cases}, f,
                  ensure_ascii=False, indent=1)
        f.write("\n")
    shutil.rmtree(work)
    for c in cases:
        same = "" if c["spm_ids"] == c["hf_ids"] else "   (HF differs)"
        print(repr(c["text"][:40]), c["spm_ids"][:12], same)
    return 0


if __name__ == "__main__":
    sys.exit(main())
