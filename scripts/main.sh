#!/usr/bin/env bash
# The main job: set up, build, print the environment report, then run the chapter's sample suite
# (each sample in its own process) and write the reports under outputs/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
./build/release/bin/spore env
./build/release/bin/spore samples run-all
