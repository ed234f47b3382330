#!/usr/bin/env bash
# Latency faults: how exactly a configured delay is kept, and what it costs
# the proxy in CPU, against the same proxy without the fault in the same run.
#
# Usage: bash bench/latency.sh          (about 9 minutes with the defaults)
#
# nginx (`return 200 "ok"`), four `firedrill proxy` (http and tcp mode, each
# with no fault and with `latency: { delay: $DELAY_MS ms }` on responses),
# wrk and curl all run pinned to core $CPU.
#
# 1. Accuracy: LAT_N sequential keep-alive requests from one curl process
#    per target (`%{time_total}`, µs resolution, the connection-opening
#    request dropped), LAT_ROUNDS interleaved rounds. Excess = measured -
#    delay; it includes the proxy's own pass-through time (the no-fault row
#    shows it). The minimum is reported too: a delay ends early when the
#    minimum is below the delay.
# 2. CPU per request: `wrk -t1 -c$C --latency -d$DUR` for each C in CONNS,
#    each target, ROUNDS interleaved rounds; the time the proxy's threads
#    ran (/proc/PID/task/*/schedstat, in ns) over the run divided by the
#    requests wrk completed. With the fault each connection sends one request per
#    ~DELAY_MS, so the delayed runs do fewer requests per second; the ratio
#    compares the cost of one request. The no-fault proxies are also run
#    paced: wrk's `delay()` waits DELAY_MS after each response, so a
#    connection sends one request per ~DELAY_MS as with the fault, and
#    "fault / paced" compares the two at the same request rate. The
#    proxy's context switches per request (/proc/PID/task/*/status) show
#    how many requests one wake-up carried.
# Every run records the share of the core that other processes took
# ("foreign"; see bench/lib.sh).
#
# Environment (defaults in brackets):
#   DELAY_MS [100]      the injected latency
#   LAT_N [300]         sequential requests per accuracy measurement
#   LAT_ROUNDS [3]      accuracy rounds
#   CONNS ["200 2000"]  wrk concurrencies for the CPU measurement
#   DUR [8]             seconds per wrk run
#   ROUNDS [3]          wrk rounds
#   CPU [0]             the core everything is pinned to
#   NICE [0]            nice level of every benchmark process
#   PORT_BASE [19100]   first of 5 consecutive loopback ports
#   FIREDRILL           the binary; default `cargo build --release --locked`
#   FIREDRILL_B         a second binary (e.g. the previous commit's) measured
#                       in the same run, interleaved: its rows are `http_b`
#                       and `tcp_b` (4 more ports)
#   BUILD [1]           0: never run cargo
#   SKIP_INSTALL [0]    1: never run apt-get (nginx, wrk, curl)
#   OUT                 result directory [bench/out/latency-<UTC time>]
set -euo pipefail

DELAY_MS=${DELAY_MS:-100}
LAT_N=${LAT_N:-300}
LAT_ROUNDS=${LAT_ROUNDS:-3}
CONNS=${CONNS:-200 2000}
DUR=${DUR:-8}
ROUNDS=${ROUNDS:-3}
CPU=${CPU:-0}
NICE=${NICE:-0}
PORT_BASE=${PORT_BASE:-19100}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/latency-$STAMP}
mkdir -p "$OUT"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)

log() { printf '[bench-latency %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
export PATH=$PATH:/usr/sbin
need_tools wrk nginx curl
firedrill_binary release
"$FIREDRILL" proxy --help >/dev/null 2>&1 || die "'$FIREDRILL proxy' is not available"
((CONNS_MAX = $(tr ' ' '\n' <<<"$CONNS" | sort -n | tail -1) + 100))
(($(ulimit -n) > 2 * CONNS_MAX)) || ulimit -n $((2 * CONNS_MAX + 1000))

LOGDIR=$OUT
bench_processes firedrill-bench-latency

P_NGINX=$PORT_BASE
MODES=(http tcp)
[[ -n ${FIREDRILL_B:-} ]] && MODES+=(http_b tcp_b)
declare -A PORT=()
TARGETS=()
n=0
for m in "${MODES[@]}"; do
    TARGETS+=("$m" "${m}_lag")
    PORT[$m]=$((PORT_BASE + (n += 1)))
    PORT[${m}_lag]=$((PORT_BASE + (n += 1)))
done
for p in $(seq "$PORT_BASE" $((PORT_BASE + n))); do
    ss -Htln "sport = :$p" | grep -q . && die "port $p is in use (set PORT_BASE)"
done
nginx_conf "$P_NGINX" >"$TMP/nginx.conf"
printf 'faults:\n  - { name: lag, latency: { delay: %sms } }\n' "$DELAY_MS" >"$TMP/lag.yaml"
printf 'function delay() return %s end\n' "$DELAY_MS" >"$TMP/think.lua"

start nginx nginx -c "$TMP/nginx.conf" -p "$TMP"
wait_port "$P_NGINX" "$LAST_PID" nginx
declare -A PID=()
for t in "${TARGETS[@]}"; do
    extra=()
    [[ $t == *_lag ]] && extra=(--faults "$TMP/lag.yaml")
    bin=$FIREDRILL mode=${t%_lag}
    [[ $mode == *_b ]] && bin=$FIREDRILL_B mode=${mode%_b}
    start "fd_$t" "$bin" proxy --listen "127.0.0.1:${PORT[$t]}" --upstream "127.0.0.1:$P_NGINX" \
        --mode "$mode" --seed 1 "${extra[@]}"
    wait_port "${PORT[$t]}" "$LAST_PID" "fd_$t"
    PID[$t]=$LAST_PID
    [[ $(curl -fsS --max-time 5 "http://127.0.0.1:${PORT[$t]}/") == ok ]] || die "$t does not answer ok"
done

RAW=$OUT/raw.tsv
printf 'kind\ttarget\tconns\tround\tmetric\tvalue\n' >"$RAW"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RAW"; }

# ---------------------------------------------------------------- accuracy
log "accuracy: ${#TARGETS[@]} targets x $LAT_ROUNDS rounds x $LAT_N sequential requests"
for r in $(seq "$LAT_ROUNDS"); do
    for t in "${TARGETS[@]}"; do
        f=$OUT/curl-$t-r$r.txt
        measured "$f.all" curl -s -o /dev/null --max-time $((LAT_N + 60)) -w '%{time_total}\n' \
            "http://127.0.0.1:${PORT[$t]}/[0-$LAT_N]" || die "curl $t failed"
        tail -n +2 "$f.all" | awk '{printf "%.3f\n", $1*1000}' >"$f"
        [[ $(wc -l <"$f") -eq $LAT_N ]] || die "expected $LAT_N timings in $f"
        for p in 50 99; do row curl "$t" 1 "$r" "p${p}_ms" "$(pctl "$p" <"$f")"; done
        row curl "$t" 1 "$r" min_ms "$(pctl 0 <"$f")"
        row curl "$t" 1 "$r" foreign_pct "$FOREIGN"
        log "curl $t r$r: p50 $(pctl 50 <"$f") ms, p99 $(pctl 99 <"$f") ms, min $(pctl 0 <"$f") ms, foreign ${FOREIGN}%"
    done
done

# ---------------------------------------------------------------- CPU
# proc_ctx PID: context switches (voluntary and not) of all its threads.
proc_ctx() { awk '/^voluntary_ctxt|^nonvoluntary_ctxt/{n+=$2} END{print n}' /proc/"$1"/task/*/status; }
# cpu_run KIND TARGET CONNS ROUND [WRK ARGS]: one wrk run, the proxy's CPU
# and context switches per request.
cpu_run() {
    local kind=$1 t=$2 c=$3 r=$4 f t0 t1 x0 x1 reqs us ctx
    shift 4
    f=$OUT/$kind-$t-c$c-r$r.txt
    t0=$(proc_cpu_ns "${PID[$t]}") x0=$(proc_ctx "${PID[$t]}")
    measured "$f" wrk -t1 -c"$c" -d"${DUR}s" --timeout 10s --latency "$@" "http://127.0.0.1:${PORT[$t]}/" ||
        die "wrk $kind $t c$c failed"
    t1=$(proc_cpu_ns "${PID[$t]}") x1=$(proc_ctx "${PID[$t]}")
    reqs=$(awk '/requests in/{print $1}' "$f")
    [[ -n $reqs && $reqs -gt 0 ]] || die "could not parse $f"
    grep -q 'Socket errors' "$f" && log "warning: $kind $t c$c r$r: $(grep 'Socket errors' "$f")"
    us=$(awk -v d=$((t1 - t0)) -v n="$reqs" 'BEGIN{printf "%.2f", d/1000/n}')
    ctx=$(awk -v d=$((x1 - x0)) -v n="$reqs" 'BEGIN{printf "%.3f", d/n}')
    row "$kind" "$t" "$c" "$r" cpu_us_per_req "$us"
    row "$kind" "$t" "$c" "$r" ctx_per_req "$ctx"
    row "$kind" "$t" "$c" "$r" rps "$(awk '/^Requests\/sec:/{print $2}' "$f")"
    row "$kind" "$t" "$c" "$r" foreign_pct "$FOREIGN"
    log "$kind $t c$c r$r: $reqs requests, $us us CPU/request, $ctx context switches/request, foreign ${FOREIGN}%"
}
for c in $CONNS; do
    log "cpu: wrk -t1 -c$c, ${#TARGETS[@]} targets (and the no-fault ones paced) x $ROUNDS rounds x ${DUR}s"
    for r in $(seq "$ROUNDS"); do
        for t in "${TARGETS[@]}"; do
            cpu_run wrk "$t" "$c" "$r"
            [[ $t == *_lag ]] || cpu_run paced "$t" "$c" "$r" -s "$TMP/think.lua"
        done
    done
done

# ---------------------------------------------------------------- report
med() { # kind target conns metric
    awk -F'\t' -v k="$1" -v t="$2" -v c="$3" -v m="$4" '$1==k&&$2==t&&$3==c&&$5==m{print $6}' "$RAW" | median
}
span() { # kind target conns metric -> min–max over rounds
    awk -F'\t' -v k="$1" -v t="$2" -v c="$3" -v m="$4" '$1==k&&$2==t&&$3==c&&$5==m{v=$6+0; if(n==0||v<lo)lo=v; if(n==0||v>hi)hi=v; n++}
        END{if(lo==hi)print lo; else print lo "–" hi}' "$RAW"
}
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
{
    printf '### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    [[ -n ${FIREDRILL_B:-} ]] && printf 'Rows `*_b`: `%s` (`%s`), interleaved with `%s` (`%s`).\n\n' \
        "$FIREDRILL_B" "$("$FIREDRILL_B" --version)" "$FIREDRILL" "$("$FIREDRILL" --version)"
    printf '`bash bench/latency.sh` (DELAY_MS=%s LAT_N=%s LAT_ROUNDS=%s CONNS="%s" DUR=%s ROUNDS=%s), everything on core %s; load average before the run %s.\n\n' \
        "$DELAY_MS" "$LAT_N" "$LAT_ROUNDS" "$CONNS" "$DUR" "$ROUNDS" "$CPU" "$LOAD0"
    printf 'Accuracy, %s sequential keep-alive requests per round (curl), median of the per-round figures:\n\n' "$LAT_N"
    printf '| mode | no-fault p50 ms | no-fault p99 ms | fault p50 ms | fault p99 ms | fault min ms | excess p50 ms | excess p99 ms | foreign %% (rounds) |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---:|---|\n'
    for m in "${MODES[@]}"; do
        fp50=$(med curl "${m}_lag" 1 p50_ms) fp99=$(med curl "${m}_lag" 1 p99_ms)
        printf '| %s | %s | %s | %s | %s | %s | **%.3f** | **%.3f** | %s |\n' "$m" \
            "$(med curl "$m" 1 p50_ms)" "$(med curl "$m" 1 p99_ms)" "$fp50" "$fp99" \
            "$(span curl "${m}_lag" 1 min_ms)" \
            "$(awk -v v="$fp50" -v d="$DELAY_MS" 'BEGIN{print v-d}')" \
            "$(awk -v v="$fp99" -v d="$DELAY_MS" 'BEGIN{print v-d}')" "$(span curl "${m}_lag" 1 foreign_pct)"
    done
    printf '\nProxy CPU per request (the time the proxy threads ran, from /proc/PID/task/*/schedstat, / requests wrk completed), median of %s rounds:\n\n' "$ROUNDS"
    printf 'No-fault: as fast as wrk goes; paced: no fault, wrk waiting %s ms after each response (the same request rate as the fault).\n\n' "$DELAY_MS"
    printf '| mode | conns | no-fault µs/req | paced µs/req | fault µs/req | fault / no-fault | **fault / paced** | context switches/req (no-fault, paced, fault) | req/s (no-fault, paced, fault) | foreign %% (rounds) |\n'
    printf '|---|---:|---:|---:|---:|---:|---:|---|---|---|\n'
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
    for c in $CONNS; do
        for m in "${MODES[@]}"; do
            b=$(med wrk "$m" "$c" cpu_us_per_req) p=$(med paced "$m" "$c" cpu_us_per_req)
            f=$(med wrk "${m}_lag" "$c" cpu_us_per_req)
            printf '| %s | %s | %s | %s | %s | %s | **%s** | %s, %s, %s | %.0f, %.0f, %.0f | %s |\n' "$m" "$c" "$b" "$p" "$f" \
                "$(ratio "$f" "$b")" "$(ratio "$f" "$p")" \
                "$(med wrk "$m" "$c" ctx_per_req)" "$(med paced "$m" "$c" ctx_per_req)" "$(med wrk "${m}_lag" "$c" ctx_per_req)" \
                "$(med wrk "$m" "$c" rps)" "$(med paced "$m" "$c" rps)" "$(med wrk "${m}_lag" "$c" rps)" \
                "$(awk -F'\t' -v c="$c" -v m="$m" '$3==c&&($2==m||$2==m"_lag")&&$5=="foreign_pct"{v=$6+0; if(n==0||v<lo)lo=v; if(n==0||v>hi)hi=v; n++} END{print lo "–" hi}' "$RAW")"
        done
    done
} | tee "$OUT/results.md"
log "raw results in $OUT"
