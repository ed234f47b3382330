#!/usr/bin/env bash
# The README's test command: installs the real clients the tests drive
# (ci/install-test-clients.sh: Toxiproxy clients, the Prometheus and JUnit
# parsers, the services under test, Chromium, tmux), builds every test
# binary, then runs them all, whatever fails. A missing client fails its
# test; no test skips. It ends with one summary: every failed test by
# binary, or that all passed.
#
# Many tests wait on real time (drills against real services, Locust,
# Prometheus, a browser), so the binaries run side by side:
# FIREDRILL_TEST_JOBS at once (2 unless set), the longest first (each
# binary's time from the last run is kept in target/ci-test-times; on a
# fresh checkout, ci/test-times, the times of a run on 2 cores). The
# drills whose verdicts hang on the timing of real services (DRILLS below)
# run one after another in the first runner; the other runners take the
# rest. The binaries that only compute, with no real-time test (NICED
# below), run under `nice`, so the real-time tests beside them get the CPU
# they ask for. Each binary's output is printed whole
# when it ends, under cargo's own `Running` line. Each runner hands its
# binaries their own range of test ports (FIREDRILL_TEST_PORT_SLOT,
# tests/port_support).
#
#   bash ci/test.sh [CARGO TEST ARGS] [-- TEST BINARY ARGS]
# e.g. `bash ci/test.sh --test blackbox -- opossum`.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

bash ci/install-test-clients.sh

cargo_args=()
binary_args=()
while [ $# -gt 0 ]; do
  if [ "$1" = -- ]; then
    shift
    binary_args=("$@")
    break
  fi
  cargo_args+=("$1")
  shift
done

out=$(mktemp -d -t firedrill-tests.XXXXXX)
trap 'rm -rf "$out"' EXIT
trap 'kill 0' INT TERM

# Build every test binary; the compiler's messages go to the terminal.
status=0
cargo test --locked --no-run --message-format=json-render-diagnostics \
  "${cargo_args[@]}" >"$out/build.json" || status=$?
if [ "$status" -ne 0 ]; then
  echo "the test build failed (exit $status)" >&2
  exit "$status"
fi

# The drills that run one at a time, beside the rest.
DRILLS="tests/blackbox.rs tests/agents.rs tests/locust.rs tests/prometheus.rs tests/seed_invariance.rs"
# The binaries that only compute: they run under nice.
NICED="tests/flat_memory.rs tests/sweep.rs tests/html_report.rs tests/api_many_toxics.rs"

# The test binaries: a label as cargo prints it, and the executable; the
# drills in queue.drills, the rest in queue.rest.
times=target/ci-test-times
touch "$times"
python3 - "$out/build.json" "$times" "$root" "$DRILLS" "$out/queue" <<'PY'
import json, os, sys
build, times, root, drills, queue = sys.argv[1:]
drills = drills.split()
known = {}
for path in ("ci/test-times", times):
    for line in open(path):
        label, _, seconds = line.rstrip("\n").rpartition("\t")
        if label:
            known[label] = float(seconds)
binaries = []
for line in open(build):
    m = json.loads(line)
    if m.get("reason") != "compiler-artifact" or not m.get("executable"):
        continue
    if not m["profile"]["test"]:
        continue
    target = m["target"]
    source = os.path.relpath(target["src_path"], root)
    label = source if "test" in target["kind"] else "unittests " + source
    binaries.append((label, m["executable"]))
# The longest first; a binary never timed before goes first of all.
binaries.sort(key=lambda b: (-known.get(b[0], float("inf")), b[0]))
with open(queue, "w") as q, open(queue + ".drills", "w") as d, open(queue + ".rest", "w") as r:
    for i, (label, exe) in enumerate(binaries):
        line = f"{i}\t{label}\t{exe}\n"
        q.write(line)
        (d if label in drills else r).write(line)
PY
count=$(wc -l <"$out/queue")
jobs=${FIREDRILL_TEST_JOBS:-2}
echo 0 >"$out/queue.drills.next"
echo 0 >"$out/queue.rest.next"

# take QUEUE: the next line of QUEUE, or nothing once all are taken.
take() {
  local n
  n=$(flock "$1.next" bash -c 'n=$(<"$1"); echo $((n + 1)) >"$1"; echo "$n"' _ "$1.next")
  sed -n "$((n + 1))p" "$1"
}

# runner SLOT: slot 0 takes the drills, then the rest; the others take the
# rest; each until none is left.
runner() {
  local slot=$1 n line label exe start rc seconds niced
  while true; do
    line=""
    [ "$slot" -ne 0 ] || line=$(take "$out/queue.drills")
    [ -n "$line" ] || line=$(take "$out/queue.rest")
    [ -n "$line" ] || return 0
    IFS=$'\t' read -r n label exe <<<"$line"
    niced=()
    case " $NICED " in *" $label "*) niced=(nice -n 10) ;; esac
    start=$(date +%s%N)
    rc=0
    (
      export FIREDRILL_TEST_PORT_SLOT=$slot FIREDRILL_TEST_PORT_SLOTS=$jobs
      export CARGO_MANIFEST_DIR=$root
      exec "${niced[@]}" "$exe" "${binary_args[@]}"
    ) >"$out/$n.log" 2>&1 || rc=$?
    seconds=$((($(date +%s%N) - start) / 1000000))
    seconds=$((seconds / 1000)).$((seconds % 1000 / 100))
    echo "$rc" >"$out/$n.rc"
    printf '%s\t%s\n' "$label" "$seconds" >"$out/$n.time"
    # Printed whole, and kept in all.log for the summary.
    {
      flock 9
      {
        printf '     Running %s (%s)\n' "$label" "${exe#"$root"/}"
        cat "$out/$n.log"
        printf '     (%s: %s s, exit %s)\n' "$label" "$seconds" "$rc"
      } | tee -a "$out/all.log"
    } 9>>"$out/print.lock"
  done
}

for slot in $(seq 0 $((jobs - 1))); do
  runner "$slot" &
done
wait

# Doc tests run by cargo, as `cargo test` would.
if [ ${#cargo_args[@]} -eq 0 ]; then
  cargo test --locked --doc -- "${binary_args[@]}" 2>&1 | tee -a "$out/all.log" || status=1
fi

for n in $(seq 0 $((count - 1))); do
  rc=$(cat "$out/$n.rc" 2>/dev/null || echo 1)
  [ "$rc" -eq 0 ] || status=1
done
# Keep this run's times beside those of binaries it did not run.
cat "$out"/*.time "$times" 2>/dev/null | awk -F'\t' '!seen[$1]++' >"$times.new"
mv "$times.new" "$times"
bash ci/test-summary.sh "$out/all.log"
exit "$status"
