# Sourced by the set-up scripts: one progress line per step, everything else into a log.
# NOTE [Quiet set-up] (docs/design.md): a person sees "==> step" lines, a build counter and the
# compiler's warnings and errors; the package managers', CMake's and ctest's full output goes to
# outputs/setup.log, whose path and tail are printed when a step fails.

# The first script of a run starts the log; the scripts it calls append to the same file.
if [ -z "${SPORE_SETUP_LOG:-}" ]; then
  mkdir -p outputs
  SPORE_SETUP_LOG="$(pwd)/outputs/setup.log"
  : > "$SPORE_SETUP_LOG"
  export SPORE_SETUP_LOG
fi

# A terminal gets one rewritten counter line; CI and pipes get plain occasional lines.
spore_is_tty() { [ -t 1 ] && [ "${CI:-}" != "true" ] && [ "${TERM:-dumb}" != "dumb" ]; }

spore_fail() {  # what failed, its exit status
  echo "==> FAILED: $1 (exit $2); full log: $SPORE_SETUP_LOG" >&2
  echo "--- last 30 lines of $SPORE_SETUP_LOG ---" >&2
  tail -n 30 "$SPORE_SETUP_LOG" >&2
  exit "$2"
}

# step "what it does" command args...: the command's output goes only to the log.
step() {
  local what="$1"; shift
  echo "==> $what"
  echo "### $what: $*" >> "$SPORE_SETUP_LOG"
  local rc=0
  "$@" >> "$SPORE_SETUP_LOG" 2>&1 || rc=$?
  [ "$rc" -eq 0 ] || spore_fail "$what" "$rc"
}

# Reads ninja's or ctest's output: "[n/m] ..." and " n/m Test ..." lines become a counter,
# everything else (warnings, errors, failing tests) is shown as it comes. All of it is logged.
spore_counter_filter() {  # label
  local tty=0
  spore_is_tty && tty=1
  awk -v label="$1" -v tty="$tty" -v logf="$SPORE_SETUP_LOG" '
    function counter(n, m) {
      if (tty) { printf "\r\033[K    %s %d/%d", label, n, m; shown = 1 }
      else if (n == m || int(10 * n / m) > last) { last = int(10 * n / m); printf "    %s %d/%d\n", label, n, m }
      fflush()
    }
    function clear() { if (shown) { printf "\r\033[K"; shown = 0 } }
    { print >> logf }
    /^Label Time Summary:/ { skip = 1; next }
    skip && /^[ \t]*$/ { skip = 0; next }
    skip { next }
    match($0, /^\[[0-9]+\/[0-9]+\]/) {
      split(substr($0, 2, RLENGTH - 2), f, "/"); counter(f[1] + 0, f[2] + 0); next
    }
    match($0, /^ *[0-9]+\/[0-9]+ Test +#/) {
      split($1, f, "/"); counter(f[1] + 0, f[2] + 0)
      if ($0 ~ /\*\*\*(Failed|Timeout|Exception)|Not Run/) { clear(); print; fflush() }
      next
    }
    /^ninja: no work to do/ { clear(); print "    up to date"; fflush(); next }
    /^(Test project| *Start +[0-9]+:)/ { next }
    /^[ \t]*$/ { next }
    { clear(); print; fflush() }
    END { if (shown) printf "\n" }'
}

# build_preset PRESET: configure (quietly) and build with a counter.
build_preset() {
  step "configuring ($1)" cmake --preset "$1"
  echo "==> building ($1)"
  echo "### building ($1)" >> "$SPORE_SETUP_LOG"
  local rc=0
  cmake --build --preset "$1" 2>&1 | spore_counter_filter "building" || rc=$?
  [ "$rc" -eq 0 ] || spore_fail "building ($1)" "$rc"
}

# test_preset PRESET: the whole suite with a counter; failing tests and the summary are shown.
test_preset() {
  echo "==> testing ($1)"
  echo "### testing ($1)" >> "$SPORE_SETUP_LOG"
  local rc=0
  ctest --preset "$1" 2>&1 | spore_counter_filter "tests" || rc=$?
  [ "$rc" -eq 0 ] || spore_fail "testing ($1)" "$rc"
}
