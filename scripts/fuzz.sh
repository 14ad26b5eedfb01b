#!/usr/bin/env bash
# Builds the fuzz targets (in build/asan when the asan preset has them, else the `fuzz` preset;
# clang, libFuzzer, AddressSanitizer + UBSan either way) and runs each fuzz target
# for a bounded time on a scratch copy of its committed seed corpus (tests/fuzz/corpus/<target>/,
# left untouched). Fails on any finding: a crash, a sanitizer report, a leak, a timeout or an
# input over the memory limit. Reproducers are kept in build/fuzz-findings/<target>/.
#
#   bash scripts/fuzz.sh [seconds-per-target] [target ...]     (default: 30 s, every target)
#   bash scripts/fuzz.sh 120                                   the long run of docs/fuzzing.md
#
# Exits 0 with a note when clang's libFuzzer is not installed (scripts/install-deps.sh installs
# it), so machines without it still pass scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
[ $# -gt 0 ] && shift
all=(npy idx csv_plain csv_gzip safetensors_bytes safetensors_file checkpoint report_show report_validate ir fused_program chat_template tokenizer_json tokenizer_encode gguf model_config onnx hub_json generate_stop serve_request mindir ms_ckpt gate_response http_request grammar json_schema embedding_request finetune_jsonl lora_adapter lite_quantize)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: skipped: clang++ is not installed"
  exit 0
fi
# The asan preset (clang) builds the targets with the suite, instrumented the same way, so
# scripts/test.sh compiles the sanitized tree once; the fuzz preset is the stand-alone way.
fuzz_dir=build/asan
if ! grep -qs '^SPORE_LIBFUZZER_LINKS:INTERNAL=1' "$fuzz_dir/CMakeCache.txt"; then
  fuzz_dir=build/fuzz
  cmake --preset fuzz >/dev/null
  if ! grep -q '^SPORE_LIBFUZZER_LINKS:INTERNAL=1' build/fuzz/CMakeCache.txt; then
    echo "fuzz: skipped: clang cannot link -fsanitize=fuzzer here (libclang-rt-14-dev missing?)"
    exit 0
  fi
fi
cmake --build "$fuzz_dir" --target fuzz_targets -j"${SPORE_FUZZ_JOBS:-2}" | tail -3

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
findings=build/fuzz-findings
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
printf '%-18s %12s %10s %8s  %s\n' target executions exec/s corpus result
for t in "${targets[@]}"; do
  bin=$fuzz_dir/tests/fuzz/fuzz_$t
  [ -x "$bin" ] || { echo "fuzz: no target '$t' (known: ${all[*]})"; exit 2; }
  mkdir -p "$work/$t/corpus" "$work/$t/artifacts"
  cp -r tests/fuzz/corpus/"$t"/. "$work/$t/corpus/" 2>/dev/null || true
  extra=()
  case $t in
    safetensors_*|checkpoint) extra+=(-dict=tests/fuzz/safetensors.dict) ;;
    report_*|finetune_jsonl) extra+=(-dict=tests/fuzz/json.dict) ;;
    serve_request) extra+=(-dict=tests/fuzz/serve_request.dict) ;;
  esac
  rc=0
  "$bin" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2560 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$work/$t/artifacts/" "${extra[@]}" "$work/$t/corpus" >"$work/$t/log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$t/log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$t/log" | tail -1)
  size=$(find "$work/$t/corpus" -type f | wc -l)
  result=ok
  if [ $rc -ne 0 ] || [ -n "$(ls -A "$work/$t/artifacts")" ]; then
    result="FINDING (exit $rc)"
    failed+=("$t")
    mkdir -p "$findings/$t"
    cp "$work/$t/artifacts"/* "$findings/$t/" 2>/dev/null || true
    cp "$work/$t/log" "$findings/$t/log.txt"
  fi
  printf '%-18s %12s %10s %8s  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$size" "$result"
  if [ "$result" != ok ]; then
    grep -m1 -A12 -E 'ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error|fuzz contract' \
      "$work/$t/log" || tail -20 "$work/$t/log"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (reproducers and logs under $findings/)"
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${secs} s each, no findings"
