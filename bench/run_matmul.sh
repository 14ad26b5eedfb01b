#!/usr/bin/env bash
# Spore float32 matmul against OpenBLAS cblas_sgemm, interleaved, with medians and ratios
# (bench/README.md, "matmul").
#
# Usage: bench/run_matmul.sh [BUILD_DIR] [REPEATS]
#   BUILD_DIR  a Spore build configured with -DSPORE_BUILD_BENCH=ON (default build/release)
#   REPEATS    runs of each (size, threads) pair per side (default 5)
# Environment: SIZES (default "1024 2048 4096"), THREADS (default "1 2"), MIN_TIME (seconds per
# run, default 1), BF16=1 to also time Spore's bfloat16 matmul.
#
# The peer runs with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed from its environment, and only
# its own: some machines set OPENBLAS_CORETYPE=Haswell globally, which halves OpenBLAS on newer
# cores. Spore's side keeps the environment as it is (it does not use OpenBLAS).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build/release}
repeats=${2:-5}
sizes=${SIZES:-"1024 2048 4096"}
threads_list=${THREADS:-"1 2"}
min_time=${MIN_TIME:-1}

bench="$build/bench/matmul_bench"
if [[ ! -x $bench ]]; then
  echo "run_matmul.sh: $bench not found; build with -DSPORE_BUILD_BENCH=ON first" >&2
  exit 1
fi
peer="$build/bench/sgemm_openblas"
gcc -O2 -o "$peer" "$root/bench/peers/sgemm_openblas.c" -lopenblas

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cpus," \
  "avx512f: $(grep -qw avx512f /proc/cpuinfo && echo yes || echo no), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "date: $(date -u +%Y-%m-%dT%H:%MZ)  repeats: $repeats  min_time: ${min_time}s"

for ((r = 1; r <= repeats; ++r)); do
  for n in $sizes; do
    for t in $threads_list; do
      "$bench" --benchmark_filter="^BM_SporeMatmulF32/n:$n/threads:$t/" \
        --benchmark_min_time="$min_time" --benchmark_format=json 2>/dev/null >"$out/spore_f32_${n}_${t}_$r.json"
      env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$peer" "$n" "$t" "$min_time" >"$out/peer_${n}_${t}_$r.txt"
      if [[ ${BF16:-0} == 1 ]]; then
        "$bench" --benchmark_filter="^BM_SporeMatmulBF16/n:$n/threads:$t/" \
          --benchmark_min_time="$min_time" --benchmark_format=json 2>/dev/null >"$out/spore_bf16_${n}_${t}_$r.json"
      fi
      echo "repeat $r n=$n threads=$t done" >&2
    done
  done
done

python3 - "$out" "$sizes" "$threads_list" "${BF16:-0}" <<'EOF'
import glob, json, re, statistics, sys
out, sizes, threads, bf16 = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4] == "1"

def spore(kind, n, t):
    vals = []
    for f in sorted(glob.glob(f"{out}/spore_{kind}_{n}_{t}_*.json")):
        b = json.load(open(f))["benchmarks"][0]
        vals.append(b["GFLOP/s"])
    return vals

def peer(n, t):
    vals = []
    for f in sorted(glob.glob(f"{out}/peer_{n}_{t}_*.txt")):
        vals.append(float(re.search(r"gflops=([0-9.]+)", open(f).read()).group(1)))
    return vals

print()
hdr = "| n | threads | Spore f32 GFLOP/s (median) | OpenBLAS GFLOP/s (median) | ratio | target 0.9 |"
if bf16:
    hdr += " Spore bf16 GFLOP/s (median) |"
print(hdr)
print("|" + "---|" * (hdr.count("|") - 1))
for n in sizes:
    for t in threads:
        s, p = statistics.median(spore("f32", n, t)), statistics.median(peer(n, t))
        ratio = s / p
        row = f"| {n} | {t} | {s:.1f} | {p:.1f} | {ratio:.2f} | {'met' if ratio >= 0.9 else 'NOT met'} |"
        if bf16:
            row += f" {statistics.median(spore('bf16', n, t)):.1f} |"
        print(row)
print()
print("raw (GFLOP/s per repeat):")
for n in sizes:
    for t in threads:
        line = f"  n={n} t={t}: spore f32 {[round(v, 1) for v in spore('f32', n, t)]}, openblas {peer(n, t)}"
        if bf16:
            line += f", spore bf16 {[round(v, 1) for v in spore('bf16', n, t)]}"
        print(line)
EOF
