#!/usr/bin/env bash
# Proxy overhead benchmark: firedrill vs haproxy vs direct, on ONE core.
#
# Usage: bash bench/proxy.sh            (about 4-5 minutes with the defaults)
#
# Every process (nginx, haproxy, firedrill, iperf3, wrk, curl) is pinned to
# the same core, so a ratio to "direct" measures CPU spent per request, not
# how many spare cores the machine has. Targets run interleaved
# (A B C D E, A B C D E, ...) and the median of the clean rounds is reported.
#
# Environment (defaults in brackets):
#   DUR [10]          seconds per wrk run
#   ROUNDS [3]        interleaved rounds; the median is reported
#   WARMUP [2]        seconds of wrk warm-up per target before the rounds
#   CONNS [32]        wrk connections (-t1 -c$CONNS)
#   CLEAN_MAX [3]     a run is "clean" when other processes used at most
#                     this % of the core meanwhile; medians use clean runs
#   EXTRA_ROUNDS [2]  extra wrk rounds allowed when too few are clean
#   BULK_DUR [5]      seconds per iperf3 run
#   BULK_ROUNDS [3]   interleaved iperf3 rounds
#   LAT_N [200]       requests per latency-fault measurement
#   LAT_DELAY_MS [100]  injected latency
#   CPU [0]           the core everything is pinned to
#   NICE [0]          nice level of every benchmark process; on a shared
#                     machine NICE=-10 (root) moves background jobs off $CPU
#   PORT_BASE [18700] first of 14 consecutive loopback ports used
#   PACED_RATE [1000] requests per second of the paced run (added latency at
#                     a moderate load: wrk -c10, each connection waiting
#                     10000/PACED_RATE ms between requests)
#   PACED_DUR [10]    seconds per paced run
#   FIREDRILL         path to the binary; if unset it is built with
#                     `cargo build --release --locked` (CARGO_TARGET_DIR honoured),
#                     with PROFILE=1 `--profile profiling` (the release code
#                     with symbols and line tables, which perf needs; the
#                     release binary is stripped)
#   FIREDRILL_B       a second binary (e.g. the previous commit's): its
#                     `http` and `defend` rows (`*_b`) run interleaved with
#                     the others, for a same-run A/B
#   BUILD [1]         set to 0 to never run cargo
#   OUT               result directory [bench/out/<UTC timestamp>]
#   SKIP_INSTALL [0]  set to 1 to never run apt-get
#   PROFILE [0]       set to 1 to measure each proxy's CPU per request
#                     (`perf stat`) and `perf record` firedrill, one extra wrk
#                     run each (reports in $OUT/perf-*.txt)
#   PERFSTAT [0]      set to 1 for the cost per request alone (no perf record,
#                     the release build): CPU µs, context switches and system
#                     calls per request of each proxy process, haproxy and
#                     firedrill side by side, `perf stat` over one extra wrk
#                     run each (with FIREDRILL_B, its rows too)
#
# Firedrill rows are skipped (with a warning) when `firedrill proxy` does not
# exist yet, so the baselines still run.
set -euo pipefail

DUR=${DUR:-10}
ROUNDS=${ROUNDS:-3}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-32}
BULK_DUR=${BULK_DUR:-5}
BULK_ROUNDS=${BULK_ROUNDS:-3}
LAT_N=${LAT_N:-200}
LAT_DELAY_MS=${LAT_DELAY_MS:-100}
CPU=${CPU:-0}
NICE=${NICE:-0}
PORT_BASE=${PORT_BASE:-18700}
PROFILE=${PROFILE:-0}
PERFSTAT=${PERFSTAT:-0}
BUILD=${BUILD:-1}
CLEAN_MAX=${CLEAN_MAX:-3}
EXTRA_ROUNDS=${EXTRA_ROUNDS:-2}
SKIP_INSTALL=${SKIP_INSTALL:-0}
PACED_RATE=${PACED_RATE:-1000}
PACED_DUR=${PACED_DUR:-10}

LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/$STAMP}
mkdir -p "$OUT"
ln -sfn "$OUT" "$REPO/bench/out/latest" 2>/dev/null || true

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
pin() { nice -n "$NICE" taskset -c "$CPU" "$@"; }

# ---------------------------------------------------------------- tools
need=()
for t in wrk haproxy nginx iperf3; do
    command -v "$t" >/dev/null 2>&1 || [[ -x /usr/sbin/$t ]] || need+=("$t")
done
if ((${#need[@]})); then
    ((SKIP_INSTALL == 0)) || die "missing: ${need[*]} (SKIP_INSTALL=1)"
    log "installing: ${need[*]}"
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y wrk haproxy nginx iperf3
fi
export PATH=$PATH:/usr/sbin
for t in taskset curl awk sort ss; do command -v "$t" >/dev/null || die "need $t"; done

# ---------------------------------------------------------------- firedrill
HAVE_FD=0
if [[ -z ${FIREDRILL:-} ]]; then
    TGT=${CARGO_TARGET_DIR:-$REPO/target}
    CARGO_PROFILE=release
    if ((PROFILE)); then CARGO_PROFILE=profiling; fi
    if ((BUILD)); then
        log "building firedrill ($CARGO_PROFILE) into $TGT"
        (cd "$REPO" && CARGO_TARGET_DIR=$TGT cargo build --profile "$CARGO_PROFILE" --locked) >"$OUT/build.log" 2>&1 ||
            log "warning: cargo build failed, see $OUT/build.log"
    fi
    FIREDRILL=$TGT/$CARGO_PROFILE/firedrill
fi
if [[ -x $FIREDRILL ]] && "$FIREDRILL" proxy --help >/dev/null 2>&1; then
    HAVE_FD=1
    log "firedrill: $FIREDRILL"
else
    log "warning: '$FIREDRILL proxy' is not available; firedrill rows are skipped"
fi

# ---------------------------------------------------------------- processes
# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
LOGDIR=$OUT
bench_processes firedrill-bench

P_NGINX=$PORT_BASE
P_HA_TCP=$((PORT_BASE + 1))
P_HA_HTTP=$((PORT_BASE + 2))
P_FD_TCP=$((PORT_BASE + 3))
P_FD_HTTP=$((PORT_BASE + 4))
P_IPERF=$((PORT_BASE + 5))
P_HA_BULK=$((PORT_BASE + 6))
P_FD_BULK=$((PORT_BASE + 7))
P_FD_LAG_TCP=$((PORT_BASE + 8))
P_FD_LAG_HTTP=$((PORT_BASE + 9))
P_FD_DEFEND=$((PORT_BASE + 10))
P_NGINX_PROXY=$((PORT_BASE + 11))
P_FDB_HTTP=$((PORT_BASE + 12))
P_FDB_DEFEND=$((PORT_BASE + 13))
for p in $(seq "$PORT_BASE" $((PORT_BASE + 13))); do
    ss -Htln "sport = :$p" | grep -q . && die "port $p is in use (set PORT_BASE)"
done

nginx_conf "$P_NGINX" >"$TMP/nginx.conf"
# nginx as a reverse proxy in front of the nginx upstream (keep-alive both
# ways), a peer of haproxy http.
mkdir -p "$TMP/nginx-proxy-state"
TMP=$TMP/nginx-proxy-state nginx_conf "$P_NGINX_PROXY" |
    sed "s|location / { return 200 \"ok\"; }|location / { proxy_pass http://nginx_upstream; proxy_http_version 1.1; proxy_set_header Connection \"\"; }|" |
    sed "s|^http {|http {\n    upstream nginx_upstream { server 127.0.0.1:$P_NGINX; keepalive 256; }|" >"$TMP/nginx-proxy.conf"
grep -q proxy_pass "$TMP/nginx-proxy.conf" || die "could not write the nginx proxy config"

cat >"$TMP/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s
frontend ha_tcp
    mode tcp
    bind 127.0.0.1:$P_HA_TCP
    default_backend be_nginx_tcp
frontend ha_http
    mode http
    option http-keep-alive
    bind 127.0.0.1:$P_HA_HTTP
    default_backend be_nginx_http
frontend ha_bulk
    mode tcp
    bind 127.0.0.1:$P_HA_BULK
    default_backend be_iperf
backend be_nginx_tcp
    mode tcp
    server nginx 127.0.0.1:$P_NGINX
backend be_nginx_http
    mode http
    http-reuse always
    server nginx 127.0.0.1:$P_NGINX
backend be_iperf
    mode tcp
    server iperf 127.0.0.1:$P_IPERF
EOF

printf 'faults:\n  - { name: lag, latency: { delay: %sms } }\n' "$LAT_DELAY_MS" >"$TMP/lag.yaml"
# `firedrill defend` with a breaker and a bulkhead that stay out of the way.
defend_conf 64 >"$TMP/defend.yaml"

log "starting nginx, haproxy, iperf3 on core $CPU (ports $PORT_BASE..)"
start nginx nginx -c "$TMP/nginx.conf" -p "$TMP"
wait_port "$P_NGINX" "$LAST_PID" nginx
curl -fsS "http://127.0.0.1:$P_NGINX/" | grep -qx ok || die "nginx does not answer ok"
start nginx_proxy nginx -c "$TMP/nginx-proxy.conf" -p "$TMP/nginx-proxy-state"
wait_port "$P_NGINX_PROXY" "$LAST_PID" nginx_proxy
start haproxy haproxy -db -f "$TMP/haproxy.cfg"
HA_PID=$LAST_PID
wait_port "$P_HA_HTTP" "$LAST_PID" haproxy
start iperf3 iperf3 -s -B 127.0.0.1 -p "$P_IPERF"
wait_port "$P_IPERF" "$LAST_PID" iperf3

fd_start() { # name listen upstream mode [extra args]
    local name=$1 listen=$2 up=$3 mode=$4; shift 4
    start "$name" "$FIREDRILL" proxy --listen "127.0.0.1:$listen" \
        --upstream "127.0.0.1:$up" --mode "$mode" --seed 1 "$@"
    wait_port "$listen" "$LAST_PID" "$name"
    FD_PID[$name]=$LAST_PID
}
declare -A FD_PID=()
if ((HAVE_FD)); then
    log "starting firedrill proxies"
    fd_start fd_tcp "$P_FD_TCP" "$P_NGINX" tcp
    fd_start fd_http "$P_FD_HTTP" "$P_NGINX" http
    fd_start fd_bulk "$P_FD_BULK" "$P_IPERF" tcp
    fd_start fd_lag_tcp "$P_FD_LAG_TCP" "$P_NGINX" tcp --faults "$TMP/lag.yaml"
    fd_start fd_lag_http "$P_FD_LAG_HTTP" "$P_NGINX" http --faults "$TMP/lag.yaml"
    start fd_defend "$FIREDRILL" defend --config "$TMP/defend.yaml" --listen "127.0.0.1:$P_FD_DEFEND" \
        --upstream "127.0.0.1:$P_NGINX"
    wait_port "$P_FD_DEFEND" "$LAST_PID" fd_defend
    FD_PID[fd_defend]=$LAST_PID
    if [[ -n ${FIREDRILL_B:-} ]]; then
        log "starting the B binary's http proxy and defense line: $FIREDRILL_B"
        start fd_http_b "$FIREDRILL_B" proxy --listen "127.0.0.1:$P_FDB_HTTP" \
            --upstream "127.0.0.1:$P_NGINX" --mode http --seed 1
        wait_port "$P_FDB_HTTP" "$LAST_PID" fd_http_b
        FD_PID[fd_http_b]=$LAST_PID
        start fd_defend_b "$FIREDRILL_B" defend --config "$TMP/defend.yaml" --listen "127.0.0.1:$P_FDB_DEFEND" \
            --upstream "127.0.0.1:$P_NGINX"
        wait_port "$P_FDB_DEFEND" "$LAST_PID" fd_defend_b
        FD_PID[fd_defend_b]=$LAST_PID
    fi
fi

# ---------------------------------------------------------------- helpers
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if(a=="nan"||b=="nan"||b==0) print "—"; else printf "%.2f", a/b }'; }
# wrk duration to milliseconds (wrk prints us, ms, s)
to_ms() { awk '{v=$1; if(v~/us$/){sub(/us$/,"",v);v/=1000} else if(v~/ms$/){sub(/ms$/,"",v)} else if(v~/m$/){sub(/m$/,"",v);v*=60000} else if(v~/s$/){sub(/s$/,"",v);v*=1000} printf "%.3f\n", v}'; }

declare -A PORT=([direct]=$P_NGINX [haproxy_tcp]=$P_HA_TCP [haproxy_http]=$P_HA_HTTP
    [firedrill_tcp]=$P_FD_TCP [firedrill_http]=$P_FD_HTTP [firedrill_defend]=$P_FD_DEFEND
    [nginx_proxy]=$P_NGINX_PROXY [firedrill_http_b]=$P_FDB_HTTP [firedrill_defend_b]=$P_FDB_DEFEND)
TARGETS=(direct haproxy_tcp haproxy_http nginx_proxy)
((HAVE_FD)) && TARGETS+=(firedrill_tcp firedrill_http firedrill_defend)
((HAVE_FD)) && [[ -n ${FIREDRILL_B:-} ]] && TARGETS+=(firedrill_http_b firedrill_defend_b)

# Sanity: every target answers "ok" before anything is measured.
for t in "${TARGETS[@]}"; do
    body=$(curl -fsS --max-time 5 "http://127.0.0.1:${PORT[$t]}/") || die "$t: request failed"
    [[ $body == ok ]] || die "$t: unexpected body '$body'"
done

RAW=$OUT/raw.tsv
printf 'kind\ttarget\tround\tmetric\tvalue\n' >"$RAW"

# Interference check: FOREIGN, set by `measured` (bench/lib.sh), is the
# share of core $CPU that went to processes other than ours during a run; a
# run with a high value was disturbed and its numbers mean little.

run_wrk() { # target round
    local t=$1 r=$2 f="$OUT/wrk-$1-r$2.txt" rps p99 errs foreign
    measured "$f" wrk -t1 -c"$CONNS" -d"${DUR}s" --latency "http://127.0.0.1:${PORT[$t]}/"
    foreign=$FOREIGN
    rps=$(awk '/^Requests\/sec:/{print $2}' "$f")
    p99=$(awk '$1=="99%"{print $2}' "$f" | to_ms)
    errs=$(awk '/Non-2xx|Socket errors/' "$f" | tr '\n' ' ')
    [[ -n $rps && -n $p99 ]] || die "could not parse $f"
    [[ -z $errs ]] || log "warning: $t round $r: $errs"
    printf 'wrk\t%s\t%s\trps\t%s\nwrk\t%s\t%s\tp99_ms\t%s\nwrk\t%s\t%s\tforeign_pct\t%s\n' \
        "$t" "$r" "$rps" "$t" "$r" "$p99" "$t" "$r" "$foreign" >>"$RAW"
    log "wrk $t r$r: ${rps} req/s, p99 ${p99} ms, foreign load on core $CPU ${foreign}%"
}

# ---------------------------------------------------------------- 1. wrk
log "wrk: ${#TARGETS[@]} targets x $ROUNDS rounds x ${DUR}s (-t1 -c$CONNS, keep-alive)"
for t in "${TARGETS[@]}"; do
    pin wrk -t1 -c"$CONNS" -d"${WARMUP}s" "http://127.0.0.1:${PORT[$t]}/" >/dev/null 2>&1
done
for r in $(seq "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do run_wrk "$t" "$r"; done
done
# Rounds disturbed by other processes (foreign load > CLEAN_MAX %) are left
# out of the medians; up to EXTRA_ROUNDS more rounds are run while some
# target has fewer than half of ROUNDS clean.
clean_count() { awk -F'\t' -v k="$1" -v t="$2" -v c="$CLEAN_MAX" '$1==k&&$2==t&&$4=="foreign_pct"&&$5<=c{n++} END{print n+0}' "$RAW"; }
need=$(((ROUNDS + 1) / 2))
extra=0
while ((extra < EXTRA_ROUNDS)); do
    short=0
    for t in "${TARGETS[@]}"; do (($(clean_count wrk "$t") >= need)) || short=1; done
    ((short)) || break
    extra=$((extra + 1)); r=$((ROUNDS + extra))
    log "too few clean rounds (foreign load > ${CLEAN_MAX}%); extra round $r"
    for t in "${TARGETS[@]}"; do run_wrk "$t" "$r"; done
done

# Optional: CPU per request of each proxy process (perf stat task-clock over
# one extra wrk run), and a perf profile of firedrill.
declare -A CPU_US=() CS_REQ=() SYS_REQ=()
COSTED=(haproxy_tcp firedrill_tcp haproxy_http firedrill_http firedrill_defend)
[[ -n ${FIREDRILL_B:-} ]] && COSTED+=(firedrill_http_b firedrill_defend_b)
if (((PROFILE || PERFSTAT) && HAVE_FD)) && command -v perf >/dev/null; then
    for t in "${COSTED[@]}"; do
        case $t in haproxy_*) pid=$HA_PID ;; *) pid=${FD_PID[fd_${t#firedrill_}]} ;; esac
        log "perf stat: $t (pid $pid)"
        perf stat -e task-clock,context-switches,raw_syscalls:sys_enter -x, -p "$pid" -o "$OUT/perfstat-$t.csv" -- sleep "$DUR" &
        perfpid=$!
        pin wrk -t1 -c"$CONNS" -d"${DUR}s" "http://127.0.0.1:${PORT[$t]}/" >"$OUT/wrk-$t-perfstat.txt" 2>&1
        wait "$perfpid" || true
        reqs=$(awk '/requests in/{print $1}' "$OUT/wrk-$t-perfstat.txt")
        CPU_US[$t]=$(awk -F, -v n="$reqs" '$3=="task-clock"{printf "%.2f", $1*1000/n}' "$OUT/perfstat-$t.csv")
        CS_REQ[$t]=$(awk -F, -v n="$reqs" '$3=="context-switches"{printf "%.2f", $1/n}' "$OUT/perfstat-$t.csv")
        SYS_REQ[$t]=$(awk -F, -v n="$reqs" '$3=="raw_syscalls:sys_enter"{printf "%.2f", $1/n}' "$OUT/perfstat-$t.csv")
        printf 'perfstat\t%s\t-\tcpu_us_per_req\t%s\n' "$t" "${CPU_US[$t]}" >>"$RAW"
        printf 'perfstat\t%s\t-\tcs_per_req\t%s\n' "$t" "${CS_REQ[$t]}" >>"$RAW"
        printf 'perfstat\t%s\t-\tsyscalls_per_req\t%s\n' "$t" "${SYS_REQ[$t]}" >>"$RAW"
    done
    for t in firedrill_tcp firedrill_http; do
        ((PROFILE)) || break
        pid=${FD_PID[fd_${t#firedrill_}]}
        log "perf record: $t (pid $pid)"
        perf record -F 999 -g -p "$pid" -o "$OUT/perf-$t.data" -- sleep "$DUR" >/dev/null 2>&1 &
        perfpid=$!
        pin wrk -t1 -c"$CONNS" -d"${DUR}s" "http://127.0.0.1:${PORT[$t]}/" >"$OUT/wrk-$t-perf.txt" 2>&1
        wait "$perfpid" || true
        perf report -i "$OUT/perf-$t.data" --no-children --percent-limit 1 --stdio -g none \
            >"$OUT/perf-$t.txt" 2>/dev/null || log "warning: perf report failed for $t"
    done
fi

# ---------------------------------------------------------------- 1b. paced
# Added latency at a moderate load: wrk's `delay()` holds each of 10
# connections for 10000/PACED_RATE ms between requests, so the rate stays
# near PACED_RATE whatever the target; wrk's latency starts when a request
# is sent.
printf 'function delay() return %s end\n' "$(awk -v r="$PACED_RATE" 'BEGIN{printf "%d", 10000/r}')" >"$TMP/paced.lua"
log "paced: ${#TARGETS[@]} targets x $ROUNDS rounds x ${PACED_DUR}s (~$PACED_RATE req/s)"
for r in $(seq "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do
        f="$OUT/paced-$t-r$r.txt"
        measured "$f" wrk -t1 -c10 -d"${PACED_DUR}s" --latency -s "$TMP/paced.lua" "http://127.0.0.1:${PORT[$t]}/"
        printf 'paced\t%s\t%s\tp50_ms\t%s\npaced\t%s\t%s\tp99_ms\t%s\npaced\t%s\t%s\trps\t%s\npaced\t%s\t%s\tforeign_pct\t%s\n' \
            "$t" "$r" "$(awk '$1=="50%"{print $2}' "$f" | to_ms)" "$t" "$r" "$(awk '$1=="99%"{print $2}' "$f" | to_ms)" \
            "$t" "$r" "$(awk '/^Requests\/sec:/{print $2}' "$f")" "$t" "$r" "$FOREIGN" >>"$RAW"
    done
done

# ---------------------------------------------------------------- 2. iperf3
declare -A BPORT=([direct]=$P_IPERF [haproxy_tcp]=$P_HA_BULK [firedrill_tcp]=$P_FD_BULK)
BTARGETS=(direct haproxy_tcp)
((HAVE_FD)) && BTARGETS+=(firedrill_tcp)
log "iperf3: ${#BTARGETS[@]} targets x $BULK_ROUNDS rounds x ${BULK_DUR}s"
for r in $(seq "$BULK_ROUNDS"); do
    for t in "${BTARGETS[@]}"; do
        f="$OUT/iperf-$t-r$r.txt"
        measured "$f" iperf3 -c 127.0.0.1 -p "${BPORT[$t]}" -t "$BULK_DUR" -f g ||
            { cat "$f" >&2; die "iperf3 $t failed"; }
        gbps=$(awk '/receiver/{for(i=1;i<=NF;i++) if($i=="Gbits/sec") print $(i-1)}' "$f" | tail -1)
        [[ -n $gbps ]] || die "could not parse $f"
        printf 'iperf\t%s\t%s\tgbps\t%s\niperf\t%s\t%s\tforeign_pct\t%s\n' "$t" "$r" "$gbps" "$t" "$r" "$FOREIGN" >>"$RAW"
        log "iperf3 $t r$r: $gbps Gbit/s, foreign load ${FOREIGN}%"
    done
done

# ---------------------------------------------------------------- 3. latency fault
# One curl process per measurement, LAT_N sequential requests on one
# keep-alive connection; time_total per request, in ms. The first request
# (connection setup) is dropped.
curl_times() { # port file
    local port=$1 f=$2
    measured "$f.all" curl -s -o /dev/null --max-time $((LAT_N * 2 + 60)) -w '%{time_total} %{num_connects}\n' \
        "http://127.0.0.1:$port/[0-$LAT_N]"
    tail -n +2 "$f.all" >"$f.raw"
    LAT_FOREIGN[$(basename "$f" .txt)]=$FOREIGN
    awk '$2 != 0 {n++} END {if (n) printf "[bench] warning: %d requests opened a new connection\n", n > "/dev/stderr"}' "$f.raw"
    awk '{printf "%.3f\n", $1*1000}' "$f.raw" >"$f"
    [[ $(wc -l <"$f") -eq $LAT_N ]] || die "expected $LAT_N timings in $f"
}
declare -A LAT_P50=() LAT_P99=() LAT_FOREIGN=()
if ((HAVE_FD)); then
    log "latency fault: ${LAT_DELAY_MS} ms, $LAT_N requests each (c=1)"
    for t in direct firedrill_tcp firedrill_http; do
        curl_times "${PORT[$t]}" "$OUT/lat-base-$t.txt"
    done
    declare -A LPORT=([firedrill_tcp]=$P_FD_LAG_TCP [firedrill_http]=$P_FD_LAG_HTTP)
    for t in firedrill_tcp firedrill_http; do
        curl_times "${LPORT[$t]}" "$OUT/lat-fault-$t.txt"
    done
    for f in "$OUT"/lat-base-*.txt "$OUT"/lat-fault-*.txt; do
        k=$(basename "$f" .txt)
        LAT_P50[$k]=$(median <"$f")
        LAT_P99[$k]=$(pctl 99 <"$f")
        printf 'lat\t%s\t-\tp50_ms\t%s\nlat\t%s\t-\tp99_ms\t%s\nlat\t%s\t-\tforeign_pct\t%s\n' \
            "$k" "${LAT_P50[$k]}" "$k" "${LAT_P99[$k]}" "$k" "${LAT_FOREIGN[$k]}" >>"$RAW"
    done
fi

# ---------------------------------------------------------------- report
# med KIND TARGET METRIC: median over the clean rounds (all rounds if none
# is clean).
med() {
    local n
    n=$(clean_count "$1" "$2")
    awk -F'\t' -v k="$1" -v t="$2" -v m="$3" -v c="$CLEAN_MAX" -v all=$((n == 0)) '
        FNR==NR { if ($1==k && $2==t && $4=="foreign_pct") f[$3]=$5; next }
        $1==k && $2==t && $4==m && (all || f[$3] <= c) { print $5 }' "$RAW" "$RAW" | median
}
declare -A RPS P99 GBPS
declare -A CLEAN=() BCLEAN=()
nrounds() { awk -F'\t' -v k="$1" -v t="$2" '$1==k&&$2==t&&$4=="foreign_pct"{n++} END{print n+0}' "$RAW"; }
for t in "${TARGETS[@]}"; do
    RPS[$t]=$(med wrk "$t" rps); P99[$t]=$(med wrk "$t" p99_ms)
    CLEAN[$t]="$(clean_count wrk "$t")/$(nrounds wrk "$t")"
done
for t in "${BTARGETS[@]}"; do
    GBPS[$t]=$(med iperf "$t" gbps); BCLEAN[$t]="$(clean_count iperf "$t")/$(nrounds iperf "$t")"
done
peer() { case $1 in *_tcp) echo haproxy_tcp ;; *_http | *_defend | *_b | nginx_proxy) echo haproxy_http ;; *) echo "" ;; esac; }
declare -A PACED50 PACED99 PACEDRPS
for t in "${TARGETS[@]}"; do
    PACED50[$t]=$(med paced "$t" p50_ms); PACED99[$t]=$(med paced "$t" p99_ms); PACEDRPS[$t]=$(med paced "$t" rps)
done

{
    echo "### Run $STAMP"
    echo
    echo "$(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo); everything pinned to core $CPU (nice $NICE); load average before the run: $LOAD0."
    echo "wrk -t1 -c$CONNS -d${DUR}s keep-alive, $ROUNDS interleaved rounds, median; iperf3 -t ${BULK_DUR}s, $BULK_ROUNDS rounds, median."
    echo
    echo "Medians over clean rounds: rounds where other processes took more than ${CLEAN_MAX}% of core $CPU are left out (all rounds are used when none is clean)."
    echo
    echo "| target | req/s | ratio to direct | ratio to haproxy (same mode) | p99 ms | p99 vs haproxy | clean rounds |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    for t in "${TARGETS[@]}"; do
        h=$(peer "$t")
        if [[ -n $h && $t != "$h" ]]; then
            rh=$(ratio "${RPS[$t]}" "${RPS[$h]}"); ph=$(ratio "${P99[$t]}" "${P99[$h]}")
        else rh="—"; ph="—"; fi
        printf '| %s | %.0f | %s | %s | %s | %s | %s |\n' "$t" "${RPS[$t]}" "$(ratio "${RPS[$t]}" "${RPS[direct]}")" "$rh" "${P99[$t]}" "$ph" "${CLEAN[$t]}"
    done
    echo
    echo "Paced load (wrk -t1 -c10 with a delay between requests, ~$PACED_RATE req/s, ${PACED_DUR}s, $ROUNDS rounds, median): added latency = the target's p50 − direct's p50."
    echo
    echo "| target | req/s | p50 ms | p99 ms | added p50 ms | added p99 ms |"
    echo "|---|---:|---:|---:|---:|---:|"
    for t in "${TARGETS[@]}"; do
        printf '| %s | %.0f | %s | %s | %s | %s |\n' "$t" "${PACEDRPS[$t]}" "${PACED50[$t]}" "${PACED99[$t]}" \
            "$(awk -v a="${PACED50[$t]}" -v b="${PACED50[direct]}" 'BEGIN{printf "%.3f", a-b}')" \
            "$(awk -v a="${PACED99[$t]}" -v b="${PACED99[direct]}" 'BEGIN{printf "%.3f", a-b}')"
    done
    if ((${#CPU_US[@]})); then
        echo
        echo "Cost per request of the proxy process (perf stat over one extra wrk run, divided by its requests):"
        echo
        echo "| proxy | CPU µs/request | context switches/request | system calls/request |"
        echo "|---|---:|---:|---:|"
        for t in "${COSTED[@]}"; do
            printf '| %s | %s | %s | %s |\n' "$t" "${CPU_US[$t]}" "${CS_REQ[$t]}" "${SYS_REQ[$t]}"
        done
    fi
    echo
    echo "| bulk (iperf3) | Gbit/s | ratio to direct | ratio to haproxy tcp | clean rounds |"
    echo "|---|---:|---:|---:|---:|"
    for t in "${BTARGETS[@]}"; do
        rh="—"; [[ $t == firedrill_tcp ]] && rh=$(ratio "${GBPS[$t]}" "${GBPS[haproxy_tcp]}")
        printf '| %s | %s | %s | %s | %s |\n' "$t" "${GBPS[$t]}" "$(ratio "${GBPS[$t]}" "${GBPS[direct]}")" "$rh" "${BCLEAN[$t]}"
    done
    if ((HAVE_FD)); then
        echo
        echo "Latency fault ${LAT_DELAY_MS} ms, $LAT_N sequential keep-alive requests (curl time_total)."
        echo "Excess = measured − ${LAT_DELAY_MS} ms (raw, includes the proxy's own cost); the no-fault baseline of the same proxy is shown for reference."
        echo
        echo "| mode | no-fault p50 ms | no-fault p99 ms | fault p50 ms | fault p99 ms | excess p50 ms | excess p99 ms | foreign load % |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|"
        for t in firedrill_tcp firedrill_http; do
            b=lat-base-$t; f=lat-fault-$t
            printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "${LAT_P50[$b]}" "${LAT_P99[$b]}" \
                "${LAT_P50[$f]}" "${LAT_P99[$f]}" \
                "$(awk -v v="${LAT_P50[$f]}" -v d="$LAT_DELAY_MS" 'BEGIN{printf "%.3f", v-d}')" \
                "$(awk -v v="${LAT_P99[$f]}" -v d="$LAT_DELAY_MS" 'BEGIN{printf "%.3f", v-d}')" "${LAT_FOREIGN[$f]}"
        done
        echo
        echo "direct (nginx, no proxy) p50 ${LAT_P50[lat-base-direct]} ms, p99 ${LAT_P99[lat-base-direct]} ms."
    else
        echo
        echo "firedrill rows skipped: \`firedrill proxy\` not available."
    fi
} | tee "$OUT/results.md"
log "raw results in $OUT"
