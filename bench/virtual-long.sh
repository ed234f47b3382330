#!/usr/bin/env bash
# A long virtual-time drill: peak memory (max RSS), wall and CPU time of
# `firedrill run experiments/bulkhead_isolation_none.yaml --clock virtual`
# stretched to $HOURS hours (two Poisson routes at 50 req/s each: 100 req/s,
# 8.64 million requests in 24 hours), measured with GNU time (`/usr/bin/time
# -v`), release build.
#
# Two runs: counting only (`--json`: no per-request file), then with
# `--report-dir` (requests.jsonl written as the run goes, about 230 bytes a
# request: ~2 GB for 24 hours, in a temporary directory removed afterwards).
# The target: under 200 MB max RSS for 24 hours at 100 req/s.
#
# Usage: bash bench/virtual-long.sh         (about 10 minutes on a free core)
# Environment (defaults in brackets):
#   HOURS [24]     simulated hours
#   CPU [1]        the core the runs are pinned to
#   FIREDRILL      the binary; default: `cargo build --release --locked`
#   REPORT_DIR [1] 0: skip the run with --report-dir
set -euo pipefail
cd "$(dirname "$0")/.."
HOURS=${HOURS:-24}
CPU=${CPU:-1}
REPORT_DIR=${REPORT_DIR:-1}
[[ -x /usr/bin/time ]] || { echo "need GNU time at /usr/bin/time (apt-get install time)" >&2; exit 1; }
if [ -z "${FIREDRILL:-}" ]; then
  cargo build --release --locked --quiet
  FIREDRILL=$PWD/target/release/firedrill
fi
FILE=experiments/bulkhead_isolation_none.yaml
SECONDS_RUN=$((HOURS * 3600))
TMP=$(mktemp -d "${TMPDIR:-/tmp}/firedrill-long.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# measure NAME ARGS...: one run under GNU time; prints a result line.
measure() {
  local name=$1
  shift
  local la
  la=$(cut -d' ' -f1 /proc/loadavg)
  local rc=0
  taskset -c "$CPU" /usr/bin/time -v -o "$TMP/$name.time" \
    "$FIREDRILL" run "$FILE" --clock virtual --quiet --set "duration=${SECONDS_RUN}s" \
    --json "$TMP/$name.json" "$@" >"$TMP/$name.log" 2>&1 || rc=$?
  # 1: an expectation failed (the drill's windows are for 60 s); still a run.
  if ((rc != 0 && rc != 1)); then
    echo "$name: exit $rc" >&2
    cat "$TMP/$name.log" >&2
    exit 1
  fi
  local rss wall user sys reqs
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TMP/$name.time")
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$TMP/$name.time")
  user=$(sed -n 's/.*User time (seconds): //p' "$TMP/$name.time")
  sys=$(sed -n 's/.*System time (seconds): //p' "$TMP/$name.time")
  reqs=$(python3 -c 'import json,sys; print(sum(r["requests"] for r in json.load(open(sys.argv[1]))["routes"]))' "$TMP/$name.json")
  python3 - "$name" "$rss" "$wall" "$user" "$sys" "$reqs" "$la" <<'PY'
import sys
name, rss, wall, user, sys_, reqs, la = sys.argv[1:]
cpu = float(user) + float(sys_)
print(f"{name}: max RSS {int(rss) / 1024:.1f} MB, wall {wall}, CPU {cpu:.1f} s "
      f"(user {user} + sys {sys_}), {int(reqs):,} requests, "
      f"{int(reqs) / cpu:,.0f} simulated requests per CPU second, load average {la} at start")
PY
}

echo "# $FILE for ${HOURS} h of virtual time at 100 req/s, pinned to core $CPU"
echo "# commit $(git rev-parse --short HEAD) $(date -u +%Y-%m-%dT%H:%MZ)"
measure counting
if ((REPORT_DIR)); then
  measure streaming --report-dir "$TMP/report"
  echo "streaming: requests.jsonl $(wc -l <"$TMP/report/requests.jsonl") lines, $(du -m "$TMP/report/requests.jsonl" | cut -f1) MB"
fi
