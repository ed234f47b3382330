#!/usr/bin/env bash
# Memory over a long real-clock drill: the resident set (VmRSS) of
# `firedrill run --clock real` sampled every $INTERVAL seconds, and its
# slope in KB/min over the samples after $WARMUP: a least-squares fit, and
# the Theil-Sen estimate (the median of the slopes between every two
# samples), beside the largest step between two samples and the load
# average seen (a stall of the machine sends a burst of concurrent
# requests, whose connections raise the resident set in one step).
#
# Usage: bash bench/soak.sh          (DURATION, 10 minutes by default, per
#                                     variant; both at once with PARALLEL=1)
#
# Two variants, each 200 req/s of Poisson arrivals (RATE) on one route whose
# dependency flaps: a `status: 503` fault with `pattern: { up: 8s, down: 4s }`
# from 5 s on, so the breaker (count window of 20, 50 %, wait_in_open 2s)
# opens in every down phase, probes, and closes in every up phase: about 50
# times each way in 10 minutes.
#   builtin  firedrill's fixture server behind its fault proxy, firedrill's
#            defense line in front (the breaker is firedrill's, recorded)
#   system   a `system:` run (black-box): the service under test is a
#            separate `firedrill defend` process (consecutive breaker: 5
#            failures, 3 successes, wait 2s) calling the dependency through
#            the drill's fault proxy; the drill infers that breaker from
#            both sides after the run
# Each run writes its report directory (requests.jsonl included) under $TMP;
# the script checks the breaker opened at least once per cycle of the
# pattern (report.json).
#
# Environment (defaults in brackets):
#   DURATION [600]     seconds of each drill
#   RATE [200]         requests per second
#   INTERVAL [5]       seconds between RSS samples
#   WARMUP [60]        seconds of samples left out of the fit
#   VARIANTS ["builtin system"]
#   PARALLEL [0]       1: run the variants at the same time (each on its
#                      own core when CPU lists two: CPU=0,1)
#   CPU [1]            the core(s) the processes are pinned to (a list
#                      with PARALLEL=1: variant i on the i-th)
#   NICE [0]           nice level of every benchmark process
#   PORT_BASE [19460]  first of 4 consecutive loopback ports
#   FIREDRILL          the binary; default: `cargo build --release --locked`
#                      into $CARGO_TARGET_DIR (or ./target)
#   BUILD [1]          0: never run cargo
#   OUT                result directory [bench/out/soak-<UTC timestamp>]
#   APPEND [0]         1: append the result section to BENCHMARKS.md
set -euo pipefail

DURATION=${DURATION:-600}
RATE=${RATE:-200}
INTERVAL=${INTERVAL:-5}
WARMUP=${WARMUP:-60}
VARIANTS=${VARIANTS:-builtin system}
PARALLEL=${PARALLEL:-0}
CPU=${CPU:-1}
NICE=${NICE:-0}
PORT_BASE=${PORT_BASE:-19460}
BUILD=${BUILD:-1}
APPEND=${APPEND:-0}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/soak-$STAMP}
mkdir -p "$OUT"

log() { printf '[bench-soak %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# ---------------------------------------------------------------- tools
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
# taskset is util-linux's, python3 computes the slopes: both are on any
# machine that builds firedrill's tests; nothing to install.
for t in taskset awk python3; do command -v "$t" >/dev/null || die "need $t"; done
((DURATION > WARMUP + 2 * INTERVAL)) || die "DURATION must exceed WARMUP by a few samples"
firedrill_binary release
"$FIREDRILL" run --help >/dev/null 2>&1 || die "'$FIREDRILL run' is not available"

# ---------------------------------------------------------------- processes
LOGDIR=$OUT
bench_processes firedrill-bench-soak
SERVICE_PORT=$PORT_BASE
DEPENDENCY_PORT=$((PORT_BASE + 1))

# The flapping dependency and the breaker both variants share: at least
# one open per 12 s cycle of the pattern.
MIN_OPENS=$(((DURATION - 5) / 12))
((MIN_OPENS > 0)) || MIN_OPENS=1
FAULT=$FLAP_FAULT
LOAD="{ name: shop, request: GET /inventory/sku-1, rate: $RATE/s, arrivals: poisson, timeout: 2s"

# the_rest LOAD_ROUTE: the load, faults and expectations of both variants.
the_rest() {
    printf 'load:\n  - %s\nfaults:\n  - %s\nexpect:\n' "$1" "$FAULT"
    printf '  - breaker inventory opens at least %s times\n  - route shop success >= 99%%\n' "$MIN_OPENS"
}

cat >"$TMP/builtin.yaml" <<EOF
name: soak, built-in target, flapping dependency
seed: 5
duration: ${DURATION}s
clock: real
target:
  builtin:
    routes:
      - { path: /inventory/*, latency: 2ms, body: '{"items":["sku-1"]}' }
defense:
  timeout: 1s
  routes:
    inventory:
      match: /inventory/*
      breaker:
        model: window
        sliding_window_type: count
        sliding_window_size: 20
        minimum_calls: 10
        failure_rate_threshold: 50%
        wait_in_open: 2s
        permitted_calls_in_half_open: 3
      fallback: { static: { status: 200, body: '{"items":[]}' } }
$(the_rest "$LOAD }")
EOF

service_defense_conf >"$TMP/service-defense.yaml"
{
    system_drill_head "soak, a user's service, flapping dependency" "$DURATION"
    the_rest "$LOAD, fallback: { header: x-firedrill-fallback } }"
} >"$TMP/system.yaml"

# cpu_of I: the core list of variant I.
cpu_of() {
    local cpus
    IFS=, read -ra cpus <<<"$CPU"
    if ((PARALLEL)); then echo "${cpus[$(($1 % ${#cpus[@]}))]}"; else echo "$CPU"; fi
}

# sample PID FILE: "seconds rss_kb load_average_1min" every $INTERVAL while
# PID lives.
sample() {
    local pid=$1 file=$2 t0 rss
    t0=$(date +%s.%N)
    while rss=$(awk '/^VmRSS:/{print $2}' "/proc/$pid/status" 2>/dev/null) && [[ -n $rss ]]; do
        printf '%s %s %s\n' "$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN{printf "%.1f", a-b}')" "$rss" \
            "$(cut -d' ' -f1 /proc/loadavg)" >>"$file"
        sleep "$INTERVAL"
    done
}

# launch I NAME: starts variant NAME's drill (and its service) pinned to
# its core; sets RUN_PID[NAME].
declare -A RUN_PID
launch() {
    local i=$1 name=$2 core
    core=$(cpu_of "$i")
    local CPU=$core
    if [[ $name == system ]]; then
        start service "$FIREDRILL" defend --config "$TMP/service-defense.yaml" \
            --listen "127.0.0.1:$SERVICE_PORT" --upstream "127.0.0.1:$DEPENDENCY_PORT"
        wait_port "$SERVICE_PORT" "$LAST_PID" service
    fi
    log "$name: ${DURATION}s at $RATE req/s on core $CPU"
    : >"$OUT/$name.rss"
    start "$name" "$FIREDRILL" run "$TMP/$name.yaml" --clock real --quiet --report-dir "$OUT/$name-report"
    RUN_PID[$name]=$LAST_PID
}

# finish NAME: waits for the drill; its result line into $OUT/NAME.result.
finish() {
    local name=$1 rc=0
    wait "${RUN_PID[$name]}" || rc=$?
    # 1: an expectation failed; the figures still stand, and say so.
    ((rc == 0 || rc == 1)) || { cat "$OUT/$name.log" >&2; die "$name: exit $rc"; }
    python3 - "$name" "$rc" "$OUT/$name.rss" "$OUT/$name-report/report.json" "$WARMUP" "$DURATION" >"$OUT/$name.result" <<'EOF'
import json, sys
name, rc, rss_file, report_file, warmup, duration = sys.argv[1:]
samples = [tuple(map(float, l.split())) for l in open(rss_file) if l.strip()]
# The drill's samples: after the warm-up, up to the end of its load. What
# the process does after that (the report, a `system:` run's inference
# over the spilled requests) is its own column.
during = [s for s in samples if s[0] <= float(duration)]
after = [s for s in samples if s[0] > float(duration)]
fit = [(s[0] / 60, s[1]) for s in during if s[0] >= float(warmup)]
n = len(fit)
mt = sum(t for t, _ in fit) / n
mk = sum(k for _, k in fit) / n
slope = sum((t - mt) * (k - mk) for t, k in fit) / sum((t - mt) ** 2 for t, _ in fit)
# Theil-Sen: the median of the slopes between every two samples, which a
# few steps (a burst of connections while the machine stalled) barely move.
pairs = sorted((k2 - k1) / (t2 - t1) for i, (t1, k1) in enumerate(fit) for t2, k2 in fit[i + 1:])
median = pairs[len(pairs) // 2] if len(pairs) % 2 else (pairs[len(pairs) // 2 - 1] + pairs[len(pairs) // 2]) / 2
step = max(k2 - k1 for (_, k1), (_, k2) in zip(fit, fit[1:]))
loads = [s[2] for s in samples if len(s) > 2]
load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "?"
report = json.load(open(report_file))
requests = sum(r["requests"] for r in report["routes"])
opens = sum(1 for b in report["breakers"] for t in b["transitions"] if t["to"] == "open")
failed = [v["expectation"] for v in report["verdicts"] if not v["passed"]]
print("\t".join(map(str, [
    name, requests, opens, f"{fit[0][1] / 1024:.1f}", f"{fit[-1][1] / 1024:.1f}",
    f"{max(s[1] for s in during) / 1024:.1f}", f"{slope:.1f}", f"{median:.1f}",
    f"{step / 1024:.1f}", n, load,
    f"{max(s[1] for s in after) / 1024:.1f}" if after else "-",
    "all held" if rc == "0" else "failed: " + "; ".join(failed),
])))
EOF
    awk -F'\t' -v m="$MIN_OPENS" '$3 < m {exit 1}' "$OUT/$name.result" ||
        die "$name: the breaker opened fewer than $MIN_OPENS times"
    log "$name: $(cut -f7 "$OUT/$name.result") KB/min (least squares), $(cut -f8 "$OUT/$name.result") KB/min (Theil-Sen)"
}

i=0
if ((PARALLEL)); then
    for v in $VARIANTS; do launch "$i" "$v"; i=$((i + 1)); done
    samplers=()
    for v in $VARIANTS; do sample "${RUN_PID[$v]}" "$OUT/$v.rss" & samplers+=($!); done
    wait "${samplers[@]}"
    for v in $VARIANTS; do finish "$v"; done
else
    for v in $VARIANTS; do
        launch "$i" "$v"
        i=$((i + 1))
        sample "${RUN_PID[$v]}" "$OUT/$v.rss"
        finish "$v"
    done
fi

# ---------------------------------------------------------------- report
# The binary's own commit (FIREDRILL may be a build of another checkout).
commit=$("$FIREDRILL" --version | sed -n 's/.*(\([0-9a-f]\{7\}\)[0-9a-f]* .*/\1/p')
[[ -n $commit ]] || commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
machine="$(nproc) cores, $(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo), Linux $(uname -r)"
{
    printf '### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    printf '`bash bench/soak.sh` (DURATION=%s RATE=%s INTERVAL=%s WARMUP=%s PARALLEL=%s CPU=%s NICE=%s), release build, %s. VmRSS of `firedrill run --clock real --quiet --report-dir D` sampled every %s s; the slopes are over the samples from %s s on to the end of the load (the last but one column is the process after it: the report, and the inference of a system run): a least-squares fit, and the Theil-Sen estimate (median of the slopes between every two samples), which the steps of a few bursts move little.\n\n' \
        "$DURATION" "$RATE" "$INTERVAL" "$WARMUP" "$PARALLEL" "$CPU" "$NICE" "$machine" "$INTERVAL" "$WARMUP"
    printf '| variant | requests | opens | RSS at %s s MB | RSS at the end of the load MB | max RSS during the load MB | slope KB/min (least squares) | slope KB/min (Theil-Sen) | largest step between samples MB | samples fitted | load average 1 min | max RSS after the load MB | verdicts |\n' "$WARMUP"
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|\n'
    for v in $VARIANTS; do
        awk -F'\t' '{printf "| %s | %d | %d | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13}' "$OUT/$v.result"
    done
} | tee "$OUT/results.md"
if ((APPEND)); then
    printf '\n' >>"$REPO/BENCHMARKS.md"
    cat "$OUT/results.md" >>"$REPO/BENCHMARKS.md"
    log "appended to $REPO/BENCHMARKS.md"
fi
log "raw results in $OUT"
