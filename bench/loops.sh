#!/usr/bin/env bash
# Event loops on more than one core: `firedrill proxy --mode http` and
# `firedrill defend` with `--loops 1` and `--loops N` against haproxy http
# with `nbthread N`, every process (nginx with N workers, wrk with N
# threads, the proxies) sharing the same N cores, so req/s compares CPU
# spent per request on those cores, as bench/proxy.sh does on one.
#
# Usage: bash bench/loops.sh            (about 3 minutes with the defaults)
#
# Targets run interleaved (A B C ..., A B C ...); the median of the rounds
# is reported with its ratio to haproxy and, for firedrill, to its own
# `--loops 1` row.
#
# Environment (defaults in brackets):
#   CPU [0,1]        the cores everything is pinned to (N = their count)
#   DUR [8]          seconds per wrk run
#   ROUNDS [3]       interleaved rounds
#   CONNS [64]       wrk connections
#   PORT_BASE [18760] first of 6 consecutive loopback ports
#   FIREDRILL        the binary; default: `cargo build --release --locked`
#   BUILD [1]        0: never run cargo
#   OUT              result directory [bench/out/loops-<UTC timestamp>]
#   SKIP_INSTALL [0] 1: never run apt-get
set -euo pipefail

CPU=${CPU:-0,1}
DUR=${DUR:-8}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-64}
PORT_BASE=${PORT_BASE:-18760}
BUILD=${BUILD:-1}
NICE=0

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/loops-$STAMP}
mkdir -p "$OUT"

log() { printf '[bench-loops %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
need_tools nginx haproxy wrk
for t in taskset curl awk; do command -v "$t" >/dev/null || die "need $t"; done
N=$(awk -F, '{print NF}' <<<"$CPU")
firedrill_binary release

LOGDIR=$OUT
bench_processes firedrill-bench-loops
P_NGINX=$PORT_BASE
P_HA=$((PORT_BASE + 1))
P_HTTP1=$((PORT_BASE + 2))
P_HTTPN=$((PORT_BASE + 3))
P_DEF1=$((PORT_BASE + 4))
P_DEFN=$((PORT_BASE + 5))

nginx_conf "$P_NGINX" | sed "s/^worker_processes 1;/worker_processes $N;/" >"$TMP/nginx.conf"
cat >"$TMP/haproxy.cfg" <<EOF
global
    nbthread $N
    maxconn 4096
defaults
    timeout connect 5s
    timeout client 300s
    timeout server 300s
    timeout http-keep-alive 300s
frontend ha_http
    mode http
    option http-keep-alive
    bind 127.0.0.1:$P_HA
    default_backend be_nginx
backend be_nginx
    mode http
    http-reuse always
    server nginx 127.0.0.1:$P_NGINX
EOF
# The breaker and bulkhead of bench/proxy.sh's defend row.
defend_conf 64 >"$TMP/defend.yaml"

log "on cores $CPU ($N): nginx x$N, haproxy nbthread $N, firedrill --loops 1 and $N"
start nginx nginx -c "$TMP/nginx.conf" -p "$TMP"
wait_port "$P_NGINX" "$LAST_PID" nginx
start haproxy haproxy -db -f "$TMP/haproxy.cfg"
wait_port "$P_HA" "$LAST_PID" haproxy
up="127.0.0.1:$P_NGINX"
start http1 "$FIREDRILL" proxy --mode http --listen "127.0.0.1:$P_HTTP1" --upstream "$up" --loops 1
wait_port "$P_HTTP1" "$LAST_PID" http1
start httpN "$FIREDRILL" proxy --mode http --listen "127.0.0.1:$P_HTTPN" --upstream "$up" --loops "$N"
wait_port "$P_HTTPN" "$LAST_PID" httpN
start defend1 "$FIREDRILL" defend --config "$TMP/defend.yaml" --listen "127.0.0.1:$P_DEF1" --upstream "$up" --loops 1
wait_port "$P_DEF1" "$LAST_PID" defend1
start defendN "$FIREDRILL" defend --config "$TMP/defend.yaml" --listen "127.0.0.1:$P_DEFN" --upstream "$up" --loops "$N"
wait_port "$P_DEFN" "$LAST_PID" defendN

TARGETS=(haproxy http1 httpN defend1 defendN)
declare -A PORT=([haproxy]=$P_HA [http1]=$P_HTTP1 [httpN]=$P_HTTPN [defend1]=$P_DEF1 [defendN]=$P_DEFN)
for t in "${TARGETS[@]}"; do
    curl -fsS "http://127.0.0.1:${PORT[$t]}/" | grep -qx ok || die "$t does not answer ok"
    taskset -c "$CPU" wrk -t"$N" -c"$CONNS" -d2s "http://127.0.0.1:${PORT[$t]}/" >/dev/null 2>&1
done
: >"$OUT/raw.tsv"
for r in $(seq "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do
        taskset -c "$CPU" wrk -t"$N" -c"$CONNS" -d"${DUR}s" --latency "http://127.0.0.1:${PORT[$t]}/" >"$OUT/wrk-$t-r$r.txt" 2>&1
        rps=$(awk '/^Requests\/sec:/{print $2}' "$OUT/wrk-$t-r$r.txt")
        printf '%s\t%s\t%s\n' "$t" "$r" "$rps" >>"$OUT/raw.tsv"
        log "$t r$r: $rps req/s"
    done
done

med() { awk -F'\t' -v t="$1" '$1 == t {print $3}' "$OUT/raw.tsv" | median; }
ha=$(med haproxy)
commit=$("$FIREDRILL" --version | sed -n 's/.*(\([0-9a-f]\{7\}\)[0-9a-f]* .*/\1/p')
{
    printf '### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "${commit:-unknown}"
    printf '`bash bench/loops.sh` (CPU=%s DUR=%s ROUNDS=%s CONNS=%s): everything on cores %s; wrk -t%s -c%s, median of %s interleaved rounds.\n\n' \
        "$CPU" "$DUR" "$ROUNDS" "$CONNS" "$CPU" "$N" "$CONNS" "$ROUNDS"
    printf '| target | req/s | vs haproxy http (nbthread %s) | vs its --loops 1 |\n|---|---:|---:|---:|\n' "$N"
    for t in "${TARGETS[@]}"; do
        v=$(med "$t")
        base=
        case $t in httpN) base=$(med http1) ;; defendN) base=$(med defend1) ;; esac
        awk -v t="$t" -v v="$v" -v ha="$ha" -v b="$base" -v n="$N" 'BEGIN {
            name = t; sub(/N$/, " --loops " n, name); sub(/1$/, " --loops 1", name)
            if (t == "haproxy") name = "haproxy http, nbthread " n
            printf "| %s | %.0f | %s | %s |\n", name, v, (t == "haproxy" ? "—" : sprintf("%.2f", v / ha)), (b == "" ? "—" : sprintf("%.2f", v / b))
        }'
    done
} | tee "$OUT/results.md"
log "raw results in $OUT"
