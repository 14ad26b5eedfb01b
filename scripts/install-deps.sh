#!/usr/bin/env bash
# Installs what Spore needs to build and test on Debian 12, by package name. Idempotent: a
# package already present is skipped, so a second run costs one dpkg query. apt's output goes to
# outputs/setup.log (NOTE [Quiet set-up]).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib/progress.sh
pkgs=(cmake ninja-build g++ pkg-config git
      libdnnl-dev libopenblas-dev
      libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libssl-dev zlib1g-dev ccache
      flatbuffers-compiler libflatbuffers-dev  # the model IR's header (NOTE [Model IR])
      python3-sklearn  # python3-sklearn: only for the 8x8 digits data set the CNN example trains on
      libpcre2-dev libutf8proc-dev  # tokenizers: pre-tokenizer regexes, Unicode normalisation
      libcurl4-openssl-dev  # spore pull: downloads from a Hugging Face-compatible hub
      libonnx-dev libprotobuf-dev protobuf-compiler  # ONNX in (Lite) and out (export, its checker)
      libcpp-httplib-dev  # spore serve: the HTTP server (NOTE [Server])
      chromium chromium-driver python3-selenium  # the chat page's browser test (serve_chat_page_browser)
      python3-jsonschema  # the constrained-decoding test validates its outputs with it (NOTE [Grammars])
      clang libclang-rt-14-dev libomp-dev  # the fuzz preset: clang, libFuzzer + sanitizers, OpenMP
      libopenmpi-dev openmpi-bin  # spore_dist and spore launch: collectives over MPI (NOTE [Distributed training])
      python3-venv  # the peers' virtual environment (scripts/install-py-peers.sh): the openai client tests
      pybind11-dev python3-dev python3-numpy python3-pytest)  # the Python modules and their tests
if [ "${1:-}" = "--bench" ]; then
  # Peers for the comparison benchmarks only: the product never links them.
  pkgs+=(libtorch-dev python3-torch python3-numpy)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  step "updating the package lists" $SUDO apt-get update -q
  step "installing ${#missing[@]} package(s): ${missing[*]}" \
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "==> packages: all ${#pkgs[@]} present"
fi
