#!/usr/bin/env bash
# Makes flaky tests visible (issue 25): runs every ctest test labelled `concurrency` (threads,
# sockets, signals, timing; docs/testing.md says which and how to label one) again and again,
# first on a quiet machine, then with the machine loaded by compile jobs, and fails if any single
# run fails. A race that shows once in fifty runs on a busy machine shows here, not in a user's
# first `scripts/test.sh`.
#
#   bash scripts/stress-tests.sh [build-dir]          (default build/release, already built)
#
# Each pass runs up to SPORE_STRESS_REPEAT rounds; a round is one `ctest -L concurrency` over the
# whole set, SPORE_STRESS_JOBS tests at a time, each test at most 120 s. Bounded time: the quiet
# pass may use 40% of SPORE_STRESS_BUDGET_S, the loaded pass the rest; a pass starts a round only
# while the slowest round so far still fits, and says how many fitted when that is fewer than
# asked (a slow machine runs fewer rounds; it never runs past the budget by more than a round).
#
# Environment:
#   SPORE_STRESS_REPEAT=20      rounds per pass
#   SPORE_STRESS_BUDGET_S=450   the whole script's time (about 8 minutes with the set-up)
#   SPORE_STRESS_JOBS=4         tests at a time (most wait on sockets and child processes; more
#                               tests than cores is part of the stress)
#   SPORE_STRESS_LOAD_JOBS=2    compile jobs that load the machine in the second pass
#
# The load is the project's own compiler commands (compile_commands.json) compiling to /dev/null
# without ccache: real compiler load that writes nothing into any build folder.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/progress.sh
build=${1:-build/release}
repeat=${SPORE_STRESS_REPEAT:-20}
budget=${SPORE_STRESS_BUDGET_S:-450}
jobs=${SPORE_STRESS_JOBS:-4}
load_jobs=${SPORE_STRESS_LOAD_JOBS:-2}
started=$(date +%s)

[ -f "$build/CTestTestfile.cmake" ] || { echo "stress: $build is not a configured build folder" >&2; exit 2; }
count=$(ctest --test-dir "$build" -N -L concurrency | awk '/^Total Tests:/ {print $3}')
if [ "${count:-0}" -eq 0 ]; then
  echo "stress: no test in $build carries the label concurrency (tests/CMakeLists.txt lost the labels?)" >&2
  exit 1
fi

# round: one run of the labelled set; ctest's output goes to the log, failures are shown.
round() {
  local rc=0
  timeout -k 10 300 ctest --test-dir "$build" -L concurrency -j"$jobs" --timeout 120 --output-on-failure \
    > "$work/round.log" 2>&1 || rc=$?
  cat "$work/round.log" >> "$SPORE_SETUP_LOG"
  if [ "$rc" -ne 0 ]; then
    grep -E '\*\*\*(Failed|Timeout|Exception)|Not Run|tests passed|^[[:space:]]+[0-9]+ - ' "$work/round.log" |
      sed 's/^/    /' >&2 || true
    # What each failed test printed (its last 30 lines): a failure seen once in many rounds must
    # be diagnosable from this screen alone (CI shows it, not the log).
    awk 'function flush(  i) { print "    --- " head; for (i = (n > 30 ? n - 30 : 0); i < n; ++i) print "    | " line[i % 30] }
         /^ *[0-9]+\/[0-9]+ Test +#/ { if (keep) flush(); keep = /\*\*\*(Failed|Timeout|Exception)/; head = $0; n = 0; next }
         /tests passed, / { if (keep) flush(); keep = 0 }
         keep { line[n++ % 30] = $0 }
         END { if (keep) flush() }' "$work/round.log" >&2 || true
  fi
  return "$rc"
}

# pass WHAT DEADLINE: rounds until $repeat of them passed or the next would end after DEADLINE.
pass() {
  local what="$1" deadline="$2" passed=0 slowest=0 t0 took now
  echo "==> stress: $count concurrency tests, up to $repeat rounds ($what)"
  echo "### stress: $what" >> "$SPORE_SETUP_LOG"
  local pass_start
  pass_start=$(date +%s)
  while [ "$passed" -lt "$repeat" ]; do
    now=$(date +%s)
    if [ "$passed" -gt 0 ] && [ $((now + slowest)) -gt "$deadline" ]; then
      echo "    $passed of $repeat rounds fitted in the time ($what; the slowest took ${slowest}s)"
      break
    fi
    t0=$now
    if ! round; then
      echo "==> FAILED: stress ($what): a concurrency test failed in round $((passed + 1)); full output: $SPORE_SETUP_LOG" >&2
      return 1
    fi
    took=$(( $(date +%s) - t0 ))
    [ "$took" -gt "$slowest" ] && slowest=$took
    passed=$((passed + 1))
    if spore_is_tty; then printf '\r\033[K    round %d/%d passed (%ds)' "$passed" "$repeat" "$took"; fi
  done
  spore_is_tty && printf '\r\033[K'
  echo "    $what: $passed rounds of $count tests passed in $(( $(date +%s) - pass_start ))s"
  rounds+=("$passed")
}

# The compile jobs of the loaded pass: each worker is its own process group, killed at exit.
work=$(mktemp -d)
load_pids=()
stop_load() {
  local pid
  for pid in "${load_pids[@]}"; do kill -- "-$pid" 2>/dev/null || true; done
  for pid in "${load_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  load_pids=()
}
trap 'stop_load; rm -rf "$work"' EXIT
start_load() {
  python3 - "$build/compile_commands.json" > "$work/load-commands" <<'EOF'
import json, shlex, sys
# Translation units of the project, compiled to /dev/null: no object, no dependency file.
entries = [e for e in json.load(open(sys.argv[1]))
           if "/src/" in e["file"] and "/generated/" not in e["file"] and e["file"].endswith(".cc")]
entries.sort(key=lambda e: e["file"])
for e in entries[::4]:  # a spread over the tree
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
  [ -s "$work/load-commands" ] || { echo "stress: no compile commands to load the machine with" >&2; return 1; }
  local j
  for ((j = 0; j < load_jobs; j++)); do
    # shuf: the workers compile different files at any moment
    setsid bash -c 'while :; do shuf "$1" | while read -r c; do CCACHE_DISABLE=1 bash -c "$c" >/dev/null 2>&1; done; done' \
      _ "$work/load-commands" &
    load_pids+=("$!")
  done
  echo "    load: $load_jobs compile jobs"
}

rounds=()
pass "quiet machine" $((started + budget * 2 / 5))
start_load
pass "loaded machine" $((started + budget))
stop_load
echo "==> stress: passed: $count tests, ${rounds[0]} rounds quiet and ${rounds[1]} loaded, in $(( $(date +%s) - started ))s"
