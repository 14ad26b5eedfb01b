#!/usr/bin/env bash
# Every test: set up, build the release and the AddressSanitizer+UBSan presets, and run the whole
# suite under both. Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh release
ctest --preset release
if [ "${SPORE_SKIP_ASAN:-0}" != 1 ]; then
  bash scripts/build.sh asan
  ctest --preset asan
fi
bash scripts/fuzz.sh 30
