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


def add_tiny_sentencepiece(hf_dir, vocab_size=256):
    """Trains a deterministic SentencePiece BPE model of at most `vocab_size` pieces into
    hf_dir/tokenizer.model (the converter pads the vocabulary to config.json's vocab_size)."""
    import sentencepiece as spm

    model = io.BytesIO()
    lines = [line for line in _TEXT.splitlines() if line] * 20
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        hard_vocab_limit=False, character_coverage=1.0, num_threads=1, minloglevel=2,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        # No NFKC table: it is most of the file (~240 KB), and the stand-in needs no normalization.
        normalization_rule_name="identity")
    pathlib.Path(hf_dir, "tokenizer.model").write_bytes(model.getvalue())


# Runs convert_hf_to_gguf.py as its own __main__, with one change: a family whose converter takes
# only a BPE tokenizer.json (its pre-tokenizer hash checked, e.g. olmo2) takes the stand-in
# tokenizer.model instead when the folder has no tokenizer.json. Weights, names and metadata are
# the converter's own.
_RUNNER = """
import pathlib, runpy, sys
src = pathlib.Path(sys.argv.pop(1))
sys.path[:0] = [str(src), str(src / "gguf-py")]
from conversion import base
gpt2 = base.TextModel._set_vocab_gpt2
def vocab(self):
    if (self.dir_model / "tokenizer.model").is_file() and not (self.dir_model / "tokenizer.json").is_file():
        return self._set_vocab_sentencepiece()
    return gpt2(self)
base.TextModel._set_vocab_gpt2 = vocab
sys.argv[0] = str(src / "convert_hf_to_gguf.py")
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def convert_with_llama_cpp(hf_dir, out_path, outtype="f32"):
    """Runs the pinned sdist's convert_hf_to_gguf.py on hf_dir, writing out_path."""
    src = pathlib.Path(llama_cpp_source(str(PEERS), [sys.executable, "-m", "pip"], LLAMA_CPP_PYTHON))
    env = dict(os.environ, PYTHONPATH=str(src / "gguf-py"), NO_LOCAL_GGUF="")
    cmd = [sys.executable, "-c", _RUNNER, str(src), str(hf_dir), "--outfile", str(out_path), "--outtype", outtype]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode != 0:
        raise RuntimeError(f"convert_hf_to_gguf.py failed on {hf_dir}:\n{run.stderr[-4000:]}")
    return out_path
