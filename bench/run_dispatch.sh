#!/usr/bin/env bash
# Eager dispatch cost of a + b on 2x2 float32: Spore (bench/elementwise_bench, BM_EagerAdd2x2) and
# libtorch (bench/peers/libtorch_add.cpp), both printed in ns/op (medians of repeats).
# Usage: bench/run_dispatch.sh [build-dir]   (default build/release; needs SPORE_BUILD_BENCH=ON)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
out=$build/bench
mkdir -p "$out"
"$build/bench/elementwise_bench" --benchmark_filter='BM_EagerAdd2x2$' --benchmark_repetitions=5 \
  --benchmark_report_aggregates_only=true 2>/dev/null | awk '/_median/ {print "spore eager add 2x2 float32: " $2 " " $3 " (median, wall), " $4 " " $5 " cpu"}'
if [ -d /usr/include/torch/csrc/api/include ]; then
  if [ ! -x "$out/libtorch_add" ] || [ "$root/bench/peers/libtorch_add.cpp" -nt "$out/libtorch_add" ]; then
    g++ -O2 -std=c++17 -I/usr/include/torch/csrc/api/include "$root/bench/peers/libtorch_add.cpp" \
      -o "$out/libtorch_add" -ltorch -ltorch_cpu -lc10
  fi
  "$out/libtorch_add"
else
  echo "libtorch: not installed (/usr/include/torch missing); peer not measured"
fi
