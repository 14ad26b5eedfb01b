#!/usr/bin/env bash
# Python peers for the comparison scripts in tools/ and bench/ (never linked into Spore): a
# virtual environment in .venv-peers/ (ignored), PyPI packages by group. Idempotent: pip skips
# what is there. Output goes to outputs/setup.log (NOTE [Quiet set-up]).
#   scripts/install-py-peers.sh nlp      tokenizers, transformers, tiktoken, jinja2, sentencepiece (fixtures, bench)
#   scripts/install-py-peers.sh onnx     onnx, onnxruntime
#   scripts/install-py-peers.sh llm      llama-cpp-python (with its server, bench/serve_bench.py), gguf
#   scripts/install-py-peers.sh torch    torch, safetensors, peft (tiny random-weight LLM fixtures, LoRA references, tools/)
#   scripts/install-py-peers.sh serve    openai, jsonschema (the suite's openai-client tests, tools/openai_client_check.py)
#   scripts/install-py-peers.sh mindspore  MindSpore 2.10.0 in its own environment, .venv-ms/ (ignored;
#                                        tools/make_mindspore_fixtures.py): its pinned numpy and
#                                        protobuf would fight the other peers' in one environment
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/progress.sh
venv=.venv-peers
if [ ! -x "$venv/bin/python" ]; then
  step "creating the peers' virtual environment in $venv" python3 -m venv "$venv"
fi
pkgs=()
for group in "$@"; do
  if [ "$group" = mindspore ]; then
    if [ ! -x .venv-ms/bin/python ]; then
      step "creating MindSpore's virtual environment in .venv-ms" python3 -m venv .venv-ms
    fi
    step "installing into .venv-ms: mindspore==2.10.0" .venv-ms/bin/pip install -q mindspore==2.10.0 numpy
    continue
  fi
  case "$group" in
    nlp) pkgs+=(tokenizers transformers tiktoken jinja2 sentencepiece numpy) ;;
    onnx) pkgs+=(onnx onnxruntime numpy) ;;
    llm) pkgs+=('llama-cpp-python[server]' gguf numpy) ;;
    torch) pkgs+=(torch safetensors numpy peft) ;;
    serve) pkgs+=(openai jsonschema) ;;
    *) echo "install-py-peers: unknown group '$group' (nlp, onnx, llm, torch, serve, mindspore)" >&2; exit 2 ;;
  esac
done
if [ ${#pkgs[@]} -gt 0 ]; then
  step "installing into $venv: ${pkgs[*]}" "$venv/bin/pip" install -q "${pkgs[@]}"
fi
