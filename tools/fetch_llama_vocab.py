"""Copies llama.cpp's vocabulary tests (models/ggml-vocab-*.gguf with their .inp/.out) from the
llama.cpp tree in llama-cpp-python's sdist into outputs/llama-vocab/, where
tests/nlp/tokenizer_llama_vocab_test.cc reads them (NOTE [GGUF pre-tokenizers]). About 60 MB,
too much to commit; the test skips with a message when they are absent.

    python3 tools/fetch_llama_vocab.py            # downloads the sdist into build/peers/ if needed

scripts/test.sh runs it, so the suite checks every file. The sdist is pinned: a newer llama.cpp may
add a vocabulary, which is new work, not a regression of the suite.
"""
import glob
import os
import shutil
import sys

from llama_cpp_sdist import llama_cpp_source

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEERS = os.path.join(ROOT, "build", "peers")
OUT = os.path.join(ROOT, "outputs", "llama-vocab")
PINNED = "0.3.36"


def main():
    src = llama_cpp_source(PEERS, [sys.executable, "-m", "pip"], PINNED)
    os.makedirs(OUT, exist_ok=True)
    n = 0
    for path in sorted(glob.glob(os.path.join(src, "models", "ggml-vocab-*"))):
        shutil.copy2(path, os.path.join(OUT, os.path.basename(path)))
        n += 1
    tests = sorted(os.path.basename(p)[: -len(".inp")] for p in glob.glob(os.path.join(OUT, "*.gguf.inp")))
    print(f"{n} files in {OUT}; {len(tests)} vocabularies with tests: {', '.join(tests)}")


if __name__ == "__main__":
    main()
