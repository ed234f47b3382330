#!/usr/bin/env bash
# What one toxic add costs as a proxy collects them: `firedrill server`, one
# proxy, then N toxics added one by one over one keep-alive connection
# (POST /proxies/bench/toxics), each add timed by the client. Reports the
# median add at 100 toxics (adds 51-150) and at N (the last 100 adds), and
# their ratio: about 1 when an add does not grow with the list.
#
# Usage: bash bench/toxics.sh     (well under a minute with the defaults)
#
# The server and the client are pinned to core $CPU; the client is also
# the proxy's upstream (a socket that accepts and reads). With OPEN=1 a
# connection through the proxy stays open and sends a byte after every
# add, so the proxy applies each new list to a running connection too.
#
# Environment (defaults in brackets):
#   N [3000]          toxics added
#   OPEN [0]          1: keep a connection through the proxy busy
#   CPU [0]           the core everything is pinned to
#   PORT_BASE [18900] first of 2 consecutive loopback ports used
#   FIREDRILL         the binary; default: built with `cargo build --release --locked`
#   APPEND [1]        set to 0 not to touch BENCHMARKS.md
set -euo pipefail

N=${N:-3000}
OPEN=${OPEN:-0}
CPU=${CPU:-0}
PORT_BASE=${PORT_BASE:-18900}
APPEND=${APPEND:-1}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-toxics %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
export PATH=$PATH:/usr/sbin
for t in curl taskset python3; do command -v "$t" >/dev/null || die "need $t"; done
((N >= 200)) || die "N must be at least 200 (the first 150 and the last 100 adds are measured)"

if [[ -z ${FIREDRILL:-} ]]; then
    TGT=${CARGO_TARGET_DIR:-$REPO/target}
    log "building firedrill (release) into $TGT"
    (cd "$REPO" && CARGO_TARGET_DIR=$TGT cargo build --release --locked) >&2
    FIREDRILL=$TGT/release/firedrill
fi

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
bench_processes firedrill-bench-toxics
LOGDIR=$TMP

P_API=$PORT_BASE P_PROXY=$((PORT_BASE + 1))
start server "$FIREDRILL" server --port "$P_API"; wait_port "$P_API" "$LAST_PID" server

# The client: creates the proxy, adds the toxics, prints one add's time in
# microseconds per line.
cat >"$TMP/adds.py" <<'EOF'
import http.client, json, socket, sys, threading, time
api, proxy, n, open_conn = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
listener = socket.create_server(("127.0.0.1", 0))
upstream = listener.getsockname()[1]
def serve():
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=lambda: [None for _ in iter(lambda: conn.recv(65536), b"")], daemon=True).start()
threading.Thread(target=serve, daemon=True).start()
c = http.client.HTTPConnection("127.0.0.1", api)
def call(method, path, body):
    c.request(method, path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    if r.status >= 300:
        sys.exit(f"{method} {path}: {r.status} {data!r}")
call("POST", "/proxies", {"name": "bench", "listen": f"127.0.0.1:{proxy}", "upstream": f"127.0.0.1:{upstream}"})
held = None
if open_conn:
    held = socket.create_connection(("127.0.0.1", proxy))
    held.sendall(b"x")
for i in range(n):
    toxic = {"name": f"t{i}", "type": "latency", "stream": "downstream", "attributes": {"latency": 0}}
    t0 = time.perf_counter()
    call("POST", "/proxies/bench/toxics", toxic)
    print(round((time.perf_counter() - t0) * 1e6))
    if held is not None:
        held.sendall(b"X")
EOF
log "adding $N toxics (a connection held open: $OPEN)"
taskset -c "$CPU" python3 "$TMP/adds.py" "$P_API" "$P_PROXY" "$N" "$OPEN" >"$TMP/adds.us"
listed=$(curl -fsS "http://127.0.0.1:$P_API/proxies/bench/toxics" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
[[ $listed == "$N" ]] || die "GET /proxies/bench/toxics lists $listed toxics, not $N"

median() { sort -g | awk '{a[NR]=$1} END{if(NR%2)print a[(NR+1)/2]; else printf "%.6g\n",(a[NR/2]+a[NR/2+1])/2}'; }
at100=$(sed -n '51,150p' "$TMP/adds.us" | median)
atN=$(tail -n 100 "$TMP/adds.us" | median)
ratio=$(awk -v a="$atN" -v b="$at100" 'BEGIN{printf "%.2f", a/b}')
total=$(awk '{s+=$1} END{printf "%.0f", s/1000}' "$TMP/adds.us")
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
report=$(
    printf '\n### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    printf '`bash bench/toxics.sh` (N=%s OPEN=%s, server and client on core %s, one keep-alive connection from Python'"'"'s http.client).\n\n' "$N" "$OPEN" "$CPU"
    printf '| median add at 100 toxics (adds 51-150) | median add at %s (last 100) | ratio | all %s adds |\n|---|---|---|---|\n' "$N" "$N"
    printf '| %s us | %s us | %s | %s ms |\n' "$at100" "$atN" "$ratio" "$total"
)
printf '%s\n' "$report"
if ((APPEND)); then
    f=$REPO/BENCHMARKS.md
    [[ -f $f ]] || printf '# Benchmarks\n' >"$f"
    grep -q '^## Adding toxics' "$f" || printf '\n## Adding toxics: one add as a proxy collects them\n\nOne toxic added at a time to one proxy over the API, timed by the client (the HTTP round trip included). A ratio near 1 means an add costs the same whatever the proxy already holds.\n' >>"$f"
    printf '%s\n' "$report" >>"$f"
    log "appended to $f"
fi
