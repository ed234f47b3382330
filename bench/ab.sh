#!/usr/bin/env bash
# Same-run A/B of two firedrill binaries in front of one nginx: the two
# proxies run side by side in two slots, the load alternates between them
# (A B A B ...), then the slots are swapped and it goes on (B A B A ...),
# since two processes of the same binary can differ by 10-40 % on a shared
# core. Each line: the binary, requests per second, the proxy's CPU per
# request (from /proc/PID/task/*/schedstat, in ns) and its context
# switches per request.
#
# Usage: bash bench/ab.sh BINARY_A BINARY_B [ROUNDS [SECONDS]]
#   (ROUNDS [3] runs per slot order and binary, SECONDS [6] per wrk run;
#   about 2 x 2 x ROUNDS x SECONDS seconds)
#
# Environment (defaults in brackets):
#   MODE [http]   http: wrk -t1 -c$CONNS over HTTP/1.1, nginx upstream;
#                 h2c: h2load -c$CONNS -m10 -n$N with prior knowledge,
#                 nginx speaking h2c, the proxies' upstream h2c://
#   DEFEND [0]    1: the slots run `firedrill defend` (a breaker and a
#                 bulkhead out of the way) instead of `proxy --mode http`
#   CONNS [32]    client connections
#   N [200000]    h2load requests per run
#   PCORE [0]     the core the proxies are pinned to
#   WCORE [0]     the core nginx and the load generator are pinned to
#   PORT [19800]  nginx; the slots are PORT+1 and PORT+2 (loopback)
set -euo pipefail
A=$1 B=$2 ROUNDS=${3:-3} SECS=${4:-6}
MODE=${MODE:-http} DEFEND=${DEFEND:-0} CONNS=${CONNS:-32} N=${N:-200000}
PCORE=${PCORE:-0} WCORE=${WCORE:-0} PORT=${PORT:-19800}
for t in nginx taskset curl; do command -v "$t" >/dev/null || { echo "need $t" >&2; exit 2; }; done
if [[ $MODE == h2c ]]; then command -v h2load >/dev/null || { echo "need h2load (nghttp2-client)" >&2; exit 2; }
else command -v wrk >/dev/null || { echo "need wrk" >&2; exit 2; }; fi

T=$(mktemp -d)
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"' EXIT
H2=""; UP=127.0.0.1:$PORT
[[ $MODE == h2c ]] && { H2=http2; UP=h2c://127.0.0.1:$PORT; }
cat >"$T/nginx.conf" <<CONF
worker_processes 1; daemon off; pid $T/nginx.pid; error_log $T/error.log warn;
events { worker_connections 4096; }
http {
    access_log off; keepalive_timeout 300s; keepalive_requests 100000000;
    client_body_temp_path $T/b; proxy_temp_path $T/p; fastcgi_temp_path $T/f;
    uwsgi_temp_path $T/u; scgi_temp_path $T/s;
    server { listen 127.0.0.1:$PORT $H2; location / { return 200 "ok"; } }
}
CONF
cat >"$T/defend.yaml" <<'CONF'
routes:
  api:
    match: /*
    breaker: { model: window, sliding_window_type: count, sliding_window_size: 100, minimum_calls: 20, failure_rate_threshold: 50%, wait_in_open: 10s }
    bulkhead: { max_concurrent: 256, max_wait: 1s }
CONF
taskset -c "$WCORE" nginx -c "$T/nginx.conf" -p "$T" &
PIDS+=($!)

# start BINARY PORT: one slot; prints its pid.
start() {
    if [[ $DEFEND == 1 ]]; then
        taskset -c "$PCORE" "$1" defend --config "$T/defend.yaml" --listen "127.0.0.1:$2" --upstream "$UP" >/dev/null 2>&1 &
    else
        taskset -c "$PCORE" "$1" proxy --listen "127.0.0.1:$2" --upstream "$UP" --mode http --seed 1 >/dev/null 2>&1 &
    fi
    echo $!
}
cpu_ns() { awk '{n+=$1} END{printf "%.0f\n", n}' /proc/"$1"/task/*/schedstat; }
switches() { awk '/ctxt_switches/{n+=$2} END{print n}' /proc/"$1"/task/*/status; }
ready() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/" && return; sleep 0.1; done; echo "port $1 never answered" >&2; exit 1; }

# once LABEL PID PORT: one run against a slot; prints its line.
once() {
    local c0 x0 c1 x1 out n rps
    c0=$(cpu_ns "$2") x0=$(switches "$2")
    if [[ $MODE == h2c ]]; then
        out=$(taskset -c "$WCORE" h2load -n "$N" -c "$CONNS" -m10 "http://127.0.0.1:$3/" 2>&1)
        n=$(awk '/^requests:/{print $8}' <<<"$out")
        rps=$(awk '/^finished in/{gsub(",","",$4); print $4}' <<<"$out")
    else
        out=$(taskset -c "$WCORE" wrk -t1 -c"$CONNS" -d"${SECS}s" "http://127.0.0.1:$3/" 2>&1)
        n=$(awk '/requests in/{print $1}' <<<"$out")
        rps=$(awk '/Requests\/sec/{print $2}' <<<"$out")
    fi
    c1=$(cpu_ns "$2") x1=$(switches "$2")
    awk -v l="$1" -v r="$rps" -v n="$n" -v c=$((c1 - c0)) -v x=$((x1 - x0)) \
        'BEGIN{printf "%s %.0f req/s, cpu %.2f us/req, ctx %.3f/req\n", l, r, c/n/1000, x/n}'
}

for order in AB BA; do
    if [[ $order == AB ]]; then first=$A second=$B l1=A l2=B; else first=$B second=$A l1=B l2=A; fi
    p1=$(start "$first" $((PORT + 1))); p2=$(start "$second" $((PORT + 2))); PIDS+=("$p1" "$p2")
    ready $((PORT + 1)); ready $((PORT + 2))
    for _ in $(seq "$ROUNDS"); do
        once "$l1" "$p1" $((PORT + 1))
        once "$l2" "$p2" $((PORT + 2))
    done
    kill "$p1" "$p2"; wait "$p1" "$p2" 2>/dev/null || true
done
