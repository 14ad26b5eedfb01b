#!/usr/bin/env bash
# Installs missing Debian packages, then configures and builds one preset (default: release):
# one line per step and a build counter; the full output in outputs/setup.log.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
preset="${1:-release}"
bash scripts/install-deps.sh
build_preset "$preset"
