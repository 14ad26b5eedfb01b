#!/usr/bin/env bash
# The main job: set up, build, print the environment report, then run the chapter's sample suite
# (each sample in its own process; each prints its figures) and write the reports under outputs/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
bash scripts/build.sh release
echo "==> environment report"
./build/release/bin/spore env
echo "==> running the chapter 5 samples"
./build/release/bin/spore samples run-all
