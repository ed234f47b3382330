#!/usr/bin/env bash
# HTTP/2 pass-through benchmark: h2load (nghttp2-client) against an h2c
# nginx upstream directly, through haproxy in h2 mode, and through
# `firedrill proxy --mode http --upstream h2c://...` and `firedrill defend`
# towards the same upstream, everything pinned to ONE core.
#
# Usage: bash bench/h2.sh           (about a minute with the defaults)
#
# Targets run interleaved (direct, haproxy, firedrill proxy, firedrill
# defend; again ...) and the median over the rounds is reported, with each
# target's ratio to direct and to haproxy measured in the same run.
#
# Environment (defaults in brackets):
#   N [200000]        requests per h2load run
#   CLIENTS [32]      h2load clients (-c), one connection each
#   STREAMS [10]      concurrent streams per connection (-m)
#   ROUNDS [3]        interleaved rounds; the median is reported
#   CPU [0]           the core everything is pinned to
#   NICE [0]          nice level of every benchmark process
#   PORT_BASE [18760] first of 4 consecutive loopback ports used
#   FIREDRILL         path to the binary; if unset it is built with
#                     `cargo build --release --locked`
#   OUT               result directory [bench/out/h2-<UTC timestamp>]
#   SKIP_INSTALL [0]  set to 1 to never run apt-get
set -euo pipefail

N=${N:-200000}
CLIENTS=${CLIENTS:-32}
STREAMS=${STREAMS:-10}
ROUNDS=${ROUNDS:-3}
CPU=${CPU:-0}
NICE=${NICE:-0}
PORT_BASE=${PORT_BASE:-18760}
SKIP_INSTALL=${SKIP_INSTALL:-0}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/h2-$STAMP}
mkdir -p "$OUT"

log() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

need=()
for t in h2load haproxy nginx; do
    command -v "$t" >/dev/null 2>&1 || [[ -x /usr/sbin/$t ]] || need+=("$t")
done
if ((${#need[@]})); then
    ((SKIP_INSTALL == 0)) || die "missing: ${need[*]} (SKIP_INSTALL=1)"
    log "installing: ${need[*]}"
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nghttp2-client haproxy nginx
fi
export PATH=$PATH:/usr/sbin

if [[ -z ${FIREDRILL:-} ]]; then
    TGT=${CARGO_TARGET_DIR:-$REPO/target}
    log "building firedrill (release) into $TGT"
    (cd "$REPO" && CARGO_TARGET_DIR=$TGT cargo build --release --locked) >"$OUT/build.log" 2>&1 ||
        die "cargo build failed, see $OUT/build.log"
    FIREDRILL=$TGT/release/firedrill
fi

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
LOGDIR=$OUT
bench_processes firedrill-h2

P_NGINX=$PORT_BASE
P_HA=$((PORT_BASE + 1))
P_FD=$((PORT_BASE + 2))
P_DEFEND=$((PORT_BASE + 3))
for p in $(seq "$PORT_BASE" $((PORT_BASE + 3))); do
    ss -Htln "sport = :$p" | grep -q . && die "port $p is in use (set PORT_BASE)"
done

# nginx answering h2c with prior knowledge (`listen ... http2` without TLS;
# Debian 12's nginx 1.22 has no `http2 on`).
nginx_conf "$P_NGINX" | sed "s|listen 127.0.0.1:$P_NGINX;|listen 127.0.0.1:$P_NGINX http2;|" >"$TMP/nginx.conf"
cat >"$TMP/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 300s
    timeout server 300s
frontend h2
    bind 127.0.0.1:$P_HA proto h2
    default_backend nginx
backend nginx
    http-reuse always
    server nginx 127.0.0.1:$P_NGINX proto h2
EOF
defend_conf 512 >"$TMP/defend.yaml"

start nginx nginx -c "$TMP/nginx.conf" -p "$TMP"
wait_port "$P_NGINX" "$LAST_PID" nginx
start haproxy haproxy -db -f "$TMP/haproxy.cfg"
wait_port "$P_HA" "$LAST_PID" haproxy
start fd_proxy "$FIREDRILL" proxy --listen "127.0.0.1:$P_FD" --upstream "h2c://127.0.0.1:$P_NGINX" --mode http
wait_port "$P_FD" "$LAST_PID" fd_proxy
start fd_defend "$FIREDRILL" defend --config "$TMP/defend.yaml" --listen "127.0.0.1:$P_DEFEND" \
    --upstream "h2c://127.0.0.1:$P_NGINX"
wait_port "$P_DEFEND" "$LAST_PID" fd_defend

TARGETS=(direct haproxy firedrill_proxy firedrill_defend)
declare -A PORT=([direct]=$P_NGINX [haproxy]=$P_HA [firedrill_proxy]=$P_FD [firedrill_defend]=$P_DEFEND)

# run TARGET ROUND: one h2load run; "req/s mean_ms" on stdout, every
# request must succeed.
run() {
    local t=$1 r=$2 f="$OUT/h2load-$1-$2.txt"
    nice -n "$NICE" taskset -c "$CPU" h2load -n "$N" -c "$CLIENTS" -m "$STREAMS" \
        "http://127.0.0.1:${PORT[$t]}/" >"$f" 2>&1 || die "h2load against $t failed, see $f"
    grep -Eq "^requests: .* $N succeeded, 0 failed, 0 errored" "$f" || die "$t: not every request succeeded, see $f"
    grep -Eq "^status codes: $N 2xx" "$f" || die "$t: not every answer was a 2xx, see $f"
    local rps mean
    rps=$(awk '/^finished in/ {for (i=1;i<=NF;i++) if ($(i+1)=="req/s,") print $i}' "$f")
    mean=$(awk '/^time for request:/ {print $6}' "$f")
    printf '%s %s\n' "$rps" "$mean"
}

# mean as h2load prints it (`512us`, `1.20ms`) in milliseconds.
to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000} printf "%.3f\n", v}'; }

log "h2load -n $N -c $CLIENTS -m $STREAMS, $ROUNDS interleaved rounds on core $CPU"
for t in "${TARGETS[@]}"; do run "$t" warmup >/dev/null; done
declare -A RPS=() MEAN=()
for r in $(seq "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do
        read -r rps mean < <(run "$t" "$r")
        RPS[$t]+="$rps "
        MEAN[$t]+="$(to_ms <<<"$mean") "
        log "round $r $t: $rps req/s, mean $mean"
    done
done

{
    printf '# h2load -n %s -c %s -m %s, %s rounds, core %s, firedrill %s, load %s\n' \
        "$N" "$CLIENTS" "$STREAMS" "$ROUNDS" "$CPU" "$("$FIREDRILL" --version)" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '| target | req/s (median) | vs direct | vs haproxy h2 | mean latency ms (median) |\n|---|---|---|---|---|\n'
    direct=$(tr ' ' '\n' <<<"${RPS[direct]}" | grep . | median)
    haproxy=$(tr ' ' '\n' <<<"${RPS[haproxy]}" | grep . | median)
    for t in "${TARGETS[@]}"; do
        rps=$(tr ' ' '\n' <<<"${RPS[$t]}" | grep . | median)
        mean=$(tr ' ' '\n' <<<"${MEAN[$t]}" | grep . | median)
        awk -v t="$t" -v r="$rps" -v d="$direct" -v h="$haproxy" -v m="$mean" \
            'BEGIN { printf "| %s | %.0f | %.2fx | %.2fx | %.3f |\n", t, r, r/d, r/h, m }'
    done
} | tee "$OUT/summary.md"
