#!/usr/bin/env bash
# TCP pass-through through a proxy created over the control plane API
# (`firedrill server` + POST /proxies) side by side with the same through
# `firedrill proxy`, and nginx direct as the floor. One core for everything.
#
# Usage: bash bench/api.sh     (about 2 minutes with the defaults)
#
# Every process (nginx, both firedrills, wrk) is pinned to core $CPU, so the
# figures measure CPU per request. Targets run interleaved (A B C, A B C, ...)
# and the median of the rounds is reported. The figures are appended to the
# "Control plane" section of BENCHMARKS.md.
#
# Environment (defaults in brackets):
#   DUR [10]          seconds per wrk run
#   ROUNDS [5]        interleaved rounds; the median is reported
#   WARMUP [2]        seconds of warm-up per target
#   CONNS [32]        wrk connections (-t1 -c$CONNS)
#   CPU [0]           the core everything is pinned to
#   PORT_BASE [18800] first of 4 consecutive loopback ports used
#   FIREDRILL         the binary; default: built with `cargo build --release --locked`
#   APPEND [1]        set to 0 not to touch BENCHMARKS.md
set -euo pipefail

DUR=${DUR:-10}
ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-2}
CONNS=${CONNS:-32}
CPU=${CPU:-0}
PORT_BASE=${PORT_BASE:-18800}
APPEND=${APPEND:-1}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[bench-api %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
pin() { taskset -c "$CPU" "$@"; }
export PATH=$PATH:/usr/sbin
for t in wrk nginx curl taskset awk; do command -v "$t" >/dev/null || die "need $t"; done

if [[ -z ${FIREDRILL:-} ]]; then
    TGT=${CARGO_TARGET_DIR:-$REPO/target}
    log "building firedrill (release) into $TGT"
    (cd "$REPO" && CARGO_TARGET_DIR=$TGT cargo build --release --locked) >&2
    FIREDRILL=$TGT/release/firedrill
fi

# shellcheck source=bench/lib.sh
source "$REPO/bench/lib.sh"
bench_processes firedrill-bench-api
LOGDIR=$TMP

P_NGINX=$PORT_BASE P_CLI=$((PORT_BASE + 1)) P_API=$((PORT_BASE + 2)) P_VIA_API=$((PORT_BASE + 3))
nginx_conf "$P_NGINX" >"$TMP/nginx.conf"
start nginx nginx -c "$TMP/nginx.conf" -p "$TMP"; wait_port "$P_NGINX" "$LAST_PID" nginx
start cli "$FIREDRILL" proxy --listen "127.0.0.1:$P_CLI" --upstream "127.0.0.1:$P_NGINX"; wait_port "$P_CLI" "$LAST_PID" cli
start server "$FIREDRILL" server --port "$P_API"; wait_port "$P_API" "$LAST_PID" server
code=$(curl -sS -o "$TMP/create.json" -w '%{http_code}' -X POST "http://127.0.0.1:$P_API/proxies" \
    -d "{\"name\":\"bench\",\"listen\":\"127.0.0.1:$P_VIA_API\",\"upstream\":\"127.0.0.1:$P_NGINX\"}")
[[ $code == 201 ]] || die "POST /proxies answered $code: $(cat "$TMP/create.json")"

declare -A PORT=([direct]=$P_NGINX [cli_proxy]=$P_CLI [api_proxy]=$P_VIA_API)
TARGETS=(direct cli_proxy api_proxy)
for t in "${TARGETS[@]}"; do
    [[ $(curl -fsS --max-time 5 "http://127.0.0.1:${PORT[$t]}/") == ok ]] || die "$t does not answer ok"
done

to_ms() { awk '{v=$1; if(v~/us$/){sub(/us$/,"",v);v/=1000} else if(v~/ms$/){sub(/ms$/,"",v)} else if(v~/s$/){sub(/s$/,"",v);v*=1000} printf "%.3f\n", v}'; }
median() { sort -g | awk '{a[NR]=$1} END{if(NR%2)print a[(NR+1)/2]; else printf "%.6g\n",(a[NR/2]+a[NR/2+1])/2}'; }
declare -A RPS P99
for t in "${TARGETS[@]}"; do pin wrk -t1 -c"$CONNS" -d"${WARMUP}s" "http://127.0.0.1:${PORT[$t]}/" >/dev/null; done
for r in $(seq "$ROUNDS"); do
    for t in "${TARGETS[@]}"; do
        out=$(pin wrk -t1 -c"$CONNS" -d"${DUR}s" --latency "http://127.0.0.1:${PORT[$t]}/")
        rps=$(awk '/^Requests\/sec:/{print $2}' <<<"$out")
        p99=$(awk '$1=="99%"{print $2}' <<<"$out" | to_ms)
        grep -q 'Non-2xx\|Socket errors' <<<"$out" && log "warning: $t r$r: errors"
        RPS[$t]+="$rps "; P99[$t]+="$p99 "
        log "r$r $t: $rps req/s, p99 $p99 ms"
    done
done

bytes=$(curl -fsS "http://127.0.0.1:$P_API/metrics" | awk '/^toxiproxy_proxy_sent_bytes_total\{direction="downstream"/{print $2}')
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
table=$(
    printf '| target | req/s (median of %s) | p99 ms (median) | vs direct |\n|---|---|---|---|\n' "$ROUNDS"
    d=$(tr ' ' '\n' <<<"${RPS[direct]}" | grep . | median)
    for t in "${TARGETS[@]}"; do
        m=$(tr ' ' '\n' <<<"${RPS[$t]}" | grep . | median)
        p=$(tr ' ' '\n' <<<"${P99[$t]}" | grep . | median)
        printf '| %s | %s | %s | %s |\n' "$t" "$m" "$p" "$(awk -v a="$m" -v b="$d" 'BEGIN{printf "%.2f", a/b}')"
    done
)
report=$(
    printf '\n### %s, commit %s\n\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$commit"
    printf '`bash bench/api.sh` (DUR=%s ROUNDS=%s CONNS=%s, all on core %s, `wrk -t1 -c%s` keep-alive GETs of a 2-byte nginx answer, interleaved rounds).\n\n' "$DUR" "$ROUNDS" "$CONNS" "$CPU" "$CONNS"
    printf '%s\n\n' "$table"
    printf 'Bytes the API proxy counted downstream (toxiproxy_proxy_sent_bytes_total): %s.\n' "${bytes:-?}"
)
printf '%s\n' "$report"
if ((APPEND)); then
    f=$REPO/BENCHMARKS.md
    [[ -f $f ]] || printf '# Benchmarks\n' >"$f"
    grep -q '^## Control plane' "$f" || printf '\n## Control plane: a proxy created over the API vs `firedrill proxy`\n\nTCP pass-through with no toxic. `api_proxy` runs the same proxy code as `cli_proxy`; the dynamic fault list costs one watch check per read on the fast path.\n' >>"$f"
    printf '%s\n' "$report" >>"$f"
    log "appended to $f"
fi
