#!/usr/bin/env bash
# Makes flaky tests visible (issue 25): runs every ctest test labelled `concurrency` (threads,
# sockets, signals, timing; docs/testing.md says which and how to label one) many times in a row,
# first on a quiet machine, then with the machine loaded by compile jobs, and fails if any single
# run fails. A race that shows once in fifty runs on a busy machine shows here, not in a user's
# first `scripts/test.sh`.
#
#   bash scripts/stress-tests.sh [build-dir]          (default build/release, already built)
#
# Environment:
#   SPORE_STRESS_REPEAT=20      runs of each test per pass (ctest --repeat until-fail:N)
#   SPORE_STRESS_BUDGET_S=420   the whole script's time limit; the passes share it
#   SPORE_STRESS_LOAD_JOBS=2    compile jobs that load the machine in the second pass
#
# Bounded time: a first single run of the set measures it; when REPEAT runs of both passes would
# not fit in the budget, each pass runs as many times as fit (at least 3), and the script says so.
# Each pass is also killed at its share of the budget (a hung test fails the script, it does not
# stall CI). The load is the project's own compiler commands (compile_commands.json) compiling to
# /dev/null without ccache: real compiler load that writes nothing into any build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
build=${1:-build/release}
repeat=${SPORE_STRESS_REPEAT:-20}
budget=${SPORE_STRESS_BUDGET_S:-420}
load_jobs=${SPORE_STRESS_LOAD_JOBS:-2}
started=$(date +%s)

[ -f "$build/CTestTestfile.cmake" ] || { echo "stress: $build is not a configured build folder" >&2; exit 2; }
count=$(ctest --test-dir "$build" -N -L concurrency | awk '/^Total Tests:/ {print $3}')
if [ "${count:-0}" -eq 0 ]; then
  echo "stress: no test in $build carries the label concurrency (tests/CMakeLists.txt lost the labels?)" >&2
  exit 1
fi

# run_set WHAT REPEATS SECONDS: the labelled set, each test up to REPEATS times, killed after
# SECONDS. ctest prints a line per run: those go to the log only; failures and the summary show.
run_set() {
  local what="$1" runs="$2" secs="$3" rc=0 t0
  t0=$(date +%s)
  echo "==> stress: $count concurrency tests x $runs ($what)"
  echo "### stress: $what, $runs runs each, at most ${secs}s" >> "$SPORE_SETUP_LOG"
  timeout -k 10 "$secs" ctest --test-dir "$build" -L concurrency -j2 --timeout 120 --output-on-failure \
    --repeat until-fail:"$runs" 2>&1 | tee -a "$SPORE_SETUP_LOG" |
    awk '/\*\*\*(Failed|Timeout|Exception)|Not Run|tests passed|The following tests FAILED|^[ \t]+[0-9]+ - / { print "    " $0; fflush() }' ||
    rc=$?
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "==> FAILED: stress ($what) did not finish in ${secs}s: a test hangs, or the labelled set grew" >&2
  elif [ "$rc" -ne 0 ]; then
    echo "==> FAILED: stress ($what): a concurrency test failed at least once; full output: $SPORE_SETUP_LOG" >&2
  fi
  echo "    ($what: $(( $(date +%s) - t0 ))s)"
  return "$rc"
}

# The compile jobs of the loaded pass: each worker is its own process group, killed at exit.
load_pids=()
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  load_pids=()
}
trap stop_load EXIT
start_load() {
  local cmds
  cmds=$(mktemp)
  python3 - "$build/compile_commands.json" > "$cmds" <<'EOF'
import json, shlex, sys
# Heavy translation units of the project, compiled to /dev/null: no object, no dependency file.
entries = [e for e in json.load(open(sys.argv[1])) if "/src/" in e["file"] and e["file"].endswith(".cc")]
entries.sort(key=lambda e: e["file"])
for e in entries[:60]:
    args = shlex.split(e["command"])
    if "ccache" in args[0]:
        args = args[1:]
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
            continue
        if a in ("-MD", "-MMD"):
            continue
        out.append(a)
    print("cd " + shlex.quote(e["directory"]) + " && " + shlex.join(out + ["-o", "/dev/null"]))
EOF
  [ -s "$cmds" ] || { echo "stress: no compile commands to load the machine with" >&2; return 1; }
  local j
  for ((j = 0; j < load_jobs; j++)); do
    # shuf: the workers compile different files at any moment
    setsid bash -c 'while :; do shuf "$1" | while read -r c; do CCACHE_DISABLE=1 bash -c "$c" >/dev/null 2>&1; done; done' \
      _ "$cmds" &
    load_pids+=("$!")
  done
}

# 1. One run of the set: a quick failure, and how long one run takes.
t0=$(date +%s)
run_set "once" 1 "$budget"
once=$(( $(date +%s) - t0 ))
[ "$once" -ge 1 ] || once=1

# 2. How many runs fit: the loaded pass is counted twice as slow as the quiet one.
left=$(( budget - ($(date +%s) - started) ))
fit=$(( left / (3 * once) ))
runs=$repeat
if [ "$fit" -lt "$runs" ]; then
  runs=$(( fit < 3 ? 3 : fit ))
  echo "    one run of the set takes ${once}s: $runs runs per pass fit in the ${budget}s budget, not $repeat"
fi
quiet_secs=$(( left / 3 ))
loaded_secs=$(( left - quiet_secs ))

run_set "quiet machine" "$runs" "$quiet_secs"
start_load
echo "    load: $load_jobs compile jobs"
run_set "loaded machine" "$runs" "$loaded_secs"
stop_load
echo "==> stress: passed, $count tests x $runs runs on a quiet and on a loaded machine in $(( $(date +%s) - started ))s"
