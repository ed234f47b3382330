#!/usr/bin/env bash
# The memory a `system:` drill (a user's own service, judged after the run)
# needs at its end, per request: the max RSS (wait4, `/usr/bin/time`) of
# the same drill run for SHORT and for LONG seconds, and the difference per
# extra request; also how long the drill took past its planned length
# (the judging at its end) and the most bytes its temporary files (the
# spills of requests and calls, on disk) held at once. The service under test is a `firedrill defend` (a
# consecutive breaker) in front of the drill's fault proxy; its dependency
# flaps (503 for 4 s of every 12 s).
#
# Usage: bash bench/system-memory.sh    (SHORT + LONG seconds, 2 minutes
#                                         with the defaults)
#
# Environment (defaults in brackets):
#   RATE [500]         requests per second
#   SHORT [30]         seconds of the shorter drill
#   LONG [90]          seconds of the longer drill
#   CPU [0]            the core every process is pinned to
#   PORT_BASE [19560]  first of 2 consecutive loopback ports
#   FIREDRILL          the binary; default: `cargo build --release --locked`
#   BUILD [1]          0: never run cargo
#   OUT                result directory [bench/out/system-memory-<UTC time>]
set -euo pipefail

RATE=${RATE:-500}
SHORT=${SHORT:-30}
LONG=${LONG:-90}
CPU=${CPU:-0}
PORT_BASE=${PORT_BASE:-19560}
BUILD=${BUILD:-1}
NICE=0

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/system-memory-$STAMP}
mkdir -p "$OUT"

log() { printf '[bench-sysmem %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
need_tools time
[[ -x /usr/bin/time ]] || die "need GNU time at /usr/bin/time"
((LONG > SHORT)) || die "LONG must exceed SHORT"
firedrill_binary release

LOGDIR=$OUT
bench_processes firedrill-bench-sysmem
SERVICE_PORT=$PORT_BASE
DEPENDENCY_PORT=$((PORT_BASE + 1))

service_defense_conf >"$TMP/defense.yaml"
# drill SECONDS: the experiment, run for SECONDS.
drill() {
    system_drill_head "memory of a user's service's drill" "$1"
    cat <<EOF
load:
  - { name: shop, request: GET /inventory/sku-1, rate: $RATE/s, arrivals: poisson, timeout: 2s, fallback: { header: x-firedrill-fallback } }
faults:
  - $FLAP_FAULT
expect:
  - breaker inventory opens at least 2 times
EOF
}

start service "$FIREDRILL" defend --config "$TMP/defense.yaml" \
    --listen "127.0.0.1:$SERVICE_PORT" --upstream "127.0.0.1:$DEPENDENCY_PORT"
wait_port "$SERVICE_PORT" "$LAST_PID" service

# spill_bytes PID: the bytes of the removed temporary files PID holds open.
spill_bytes() {
    local total=0 fd size
    for fd in /proc/"$1"/fd/*; do
        [[ $(readlink "$fd" 2>/dev/null) == *firedrill-spill*'(deleted)' ]] || continue
        size=$(stat -L -c %s "$fd" 2>/dev/null) || continue
        total=$((total + size))
    done
    echo "$total"
}

declare -A RSS REQUESTS ELAPSED SPILL
for d in "$SHORT" "$LONG"; do
    drill "$d" >"$TMP/drill-$d.yaml"
    log "a ${d} s drill at $RATE req/s"
    rc=0
    taskset -c "$CPU" /usr/bin/time -f "%M %e" -o "$OUT/rss-$d.txt" \
        "$FIREDRILL" run "$TMP/drill-$d.yaml" --quiet --report-dir "$OUT/report-$d" >"$OUT/run-$d.log" 2>&1 &
    timer=$!
    most=0
    while kill -0 "$timer" 2>/dev/null; do
        pid=$(pgrep -P "$timer" | head -1 || true)
        if [[ -n $pid ]]; then
            now=$(spill_bytes "$pid")
            ((now > most)) && most=$now
        fi
        sleep 1
    done
    wait "$timer" || rc=$?
    ((rc == 0 || rc == 1)) || { cat "$OUT/run-$d.log" >&2; die "the ${d} s drill exited $rc"; }
    read -r RSS[$d] ELAPSED[$d] < <(tail -1 "$OUT/rss-$d.txt")
    SPILL[$d]=$most
    REQUESTS[$d]=$(python3 -c 'import json,sys; print(sum(r["requests"] for r in json.load(open(sys.argv[1]))["routes"]))' "$OUT/report-$d/report.json")
    log "${d} s: ${REQUESTS[$d]} requests, max RSS ${RSS[$d]} KB, ${ELAPSED[$d]} s, temporary files up to ${SPILL[$d]} B"
done

commit=$("$FIREDRILL" --version | sed -n 's/.*(\([0-9a-f]\{7\}\)[0-9a-f]* .*/\1/p')
{
    printf '### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "${commit:-unknown}"
    printf '`bash bench/system-memory.sh` (RATE=%s SHORT=%s LONG=%s CPU=%s)\n\n' "$RATE" "$SHORT" "$LONG" "$CPU"
    printf '| drill | requests | max RSS KB | took s | temporary files MiB (sampled each second) |\n|---|---:|---:|---:|---:|\n'
    for d in "$SHORT" "$LONG"; do
        printf '| %s s | %s | %s | %s | %.1f |\n' "$d" "${REQUESTS[$d]}" "${RSS[$d]}" "${ELAPSED[$d]}" "$(awk -v b="${SPILL[$d]}" 'BEGIN { printf "%.1f", b / 1048576 }')"
    done
    awk -v r1="${RSS[$SHORT]}" -v r2="${RSS[$LONG]}" -v n1="${REQUESTS[$SHORT]}" -v n2="${REQUESTS[$LONG]}" \
        'BEGIN { printf "\nPer extra request: %.2f KB of max RSS.\n", (r2 - r1) / (n2 - n1) }'
} | tee "$OUT/results.md"
log "raw results in $OUT"
