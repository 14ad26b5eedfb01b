#!/usr/bin/env bash
# The main job: set up, build, print the environment report, then run the chapter's sample suite
# (each sample in its own process; each prints its figures) and write the reports under outputs/;
# last, the embedded LLM (SmolLM2-135M-Instruct, fetched and verified against its lock) continues a
# prompt greedily, printing the text and its tokens/s.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
bash scripts/build.sh release
bash scripts/fetch-model.sh
echo "==> environment report"
./build/release/bin/spore env
echo "==> running the chapter 5 samples"
./build/release/bin/spore samples run-all
echo "==> the embedded LLM: spore generate (SmolLM2-135M-Instruct, greedy, 32 tokens)"
./build/release/bin/spore generate --prompt "The capital of France is" --max-tokens 32 --temperature 0
