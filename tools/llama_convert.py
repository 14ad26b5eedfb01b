"""GGUF files written by llama.cpp's own convert_hf_to_gguf.py (the converter users get their files
from), for the tiny random-weight fixtures of tools/make_llm_fixtures.py and their kin.

The converter refuses a Hugging Face folder without a tokenizer, and its BPE path refuses any
tokenizer whose pre-tokenizer hash it does not know, so a tiny fixture gets a tiny SentencePiece
model (tokenizer.model): most families' set_vocab tries SentencePiece first, and that path has no
hash check. The weights, names, layouts and metadata are the converter's own; only the vocabulary
is a stand-in (the fixtures test logits over token ids, not tokenization).

    from llama_convert import add_tiny_sentencepiece, convert_with_llama_cpp
    add_tiny_sentencepiece(hf_dir, vocab_size=256)
    convert_with_llama_cpp(hf_dir, out_dir / "model-llama-cpp.gguf")

Needs the peers environment (scripts/install-py-peers.sh nlp torch llm: transformers, torch,
sentencepiece, numpy) and llama.cpp's sources from the pinned llama-cpp-python sdist."""
import io
import os
import pathlib
import subprocess
import sys

from llama_cpp_sdist import llama_cpp_source

ROOT = pathlib.Path(__file__).resolve().parent.parent
PEERS = ROOT / "build" / "peers"
# The sdist whose converter wrote the committed fixtures (tests/fixtures/llm/*/model-llama-cpp.gguf).
LLAMA_CPP_PYTHON = "0.3.36"

# Training text for the stand-in tokenizer: any fixed text works; it only has to yield enough
# merges for a few hundred pieces.
_TEXT = """The quick brown fox jumps over the lazy dog. Pack my box with five dozen liquor jugs.
How vexingly quick daft zebras jump! Sphinx of black quartz, judge my vow. The five boxing
wizards jump quickly. Jackdaws love my big sphinx of quartz. 0123456789 + - * / = ( ) [ ] { }
A model loads when its loader covers it; whether it runs depends on the kernels behind it.
"""


def add_tiny_sentencepiece(hf_dir, vocab_size=256, identity_normalizer=False):
    """Trains a deterministic SentencePiece BPE model of at most `vocab_size` pieces into
    hf_dir/tokenizer.model (the converter pads the vocabulary to config.json's vocab_size).
    identity_normalizer: no NFKC table in the file (3 KB instead of 240 KB)."""
    import sentencepiece as spm

    model = io.BytesIO()
    lines = [line for line in _TEXT.splitlines() if line] * 20
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        hard_vocab_limit=False, character_coverage=1.0, num_threads=1, minloglevel=2,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        **({"normalization_rule_name": "identity"} if identity_normalizer else {}))
    pathlib.Path(hf_dir, "tokenizer.model").write_bytes(model.getvalue())


# Families whose set_vocab goes straight to the BPE path (qwen2moe, qwen3moe, deepseek2): the
# converter is run with its BPE reader pointed at its own SentencePiece reader, so the stand-in
# tokenizer.model serves them too. Everything else (weights, names, metadata) is untouched.
_SENTENCEPIECE_FOR_BPE = """
import runpy, sys
sys.path.insert(0, sys.argv[1])
import conversion.base as base
base.TextModel._set_vocab_gpt2 = lambda self: base.TextModel._set_vocab_sentencepiece(self)
script = sys.argv[1] + "/convert_hf_to_gguf.py"
sys.argv = [script] + sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


def convert_with_llama_cpp(hf_dir, out_path, outtype="f32", sentencepiece_vocab=False):
    """Runs the pinned sdist's convert_hf_to_gguf.py on hf_dir, writing out_path.
    sentencepiece_vocab: read the stand-in tokenizer.model even where the family's set_vocab
    would only try tokenizer.json (see _SENTENCEPIECE_FOR_BPE)."""
    src = pathlib.Path(llama_cpp_source(str(PEERS), [sys.executable, "-m", "pip"], LLAMA_CPP_PYTHON))
    env = dict(os.environ, PYTHONPATH=str(src / "gguf-py"), NO_LOCAL_GGUF="")
    args = [str(hf_dir), "--outfile", str(out_path), "--outtype", outtype]
    if sentencepiece_vocab:
        cmd = [sys.executable, "-c", _SENTENCEPIECE_FOR_BPE, str(src)] + args
    else:
        cmd = [sys.executable, str(src / "convert_hf_to_gguf.py")] + args
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py failed on {hf_dir}:\n{run.stderr[-4000:]}")
    return out_path
