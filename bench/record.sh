#!/usr/bin/env bash
# Proxy CPU per request in HTTP mode: a base build against this build
# counting requests only and this build writing --record, A/B in rounds.
#   bash bench/record.sh BASE_BINARY [HEAD_BINARY] [ROUNDS]
# The proxies run on core 0, wrk (-t1 -c32 -d8s /health) and the fixture
# target on core 1; CPU time is read from /proc before and after each run.
set -euo pipefail
base=${1:?usage: bench/record.sh BASE_BINARY [HEAD_BINARY] [ROUNDS]}
head=${2:-target/release/firedrill}
rounds=${3:-5}
out=$(mktemp -d)
cpu() { awk '{print $14+$15}' "/proc/$1/stat"; }
taskset -c 1 "$head" target --listen 127.0.0.1:19100 2>/dev/null & target=$!
taskset -c 0 "$base" proxy --listen 127.0.0.1:19101 --upstream 127.0.0.1:19100 --mode http 2>/dev/null & p1=$!
taskset -c 0 "$head" proxy --listen 127.0.0.1:19102 --upstream 127.0.0.1:19100 --mode http 2>/dev/null & p2=$!
taskset -c 0 "$head" proxy --listen 127.0.0.1:19103 --upstream 127.0.0.1:19100 --mode http --record "$out/records.jsonl" 2>/dev/null & p3=$!
trap 'kill -TERM $p1 $p2 $p3 $target 2>/dev/null; rm -rf "$out"' EXIT
declare -A pid=([19101]=$p1 [19102]=$p2 [19103]=$p3)
declare -A label=([19101]=base [19102]=counting [19103]=record)
sleep 1
for p in 19101 19102 19103; do taskset -c 1 wrk -t1 -c32 -d3s "http://127.0.0.1:$p/health" >/dev/null; done
for r in $(seq "$rounds"); do
  for p in 19101 19102 19103; do
    before=$(cpu "${pid[$p]}")
    n=$(taskset -c 1 wrk -t1 -c32 -d8s "http://127.0.0.1:$p/health" | awk '/requests in/{print $1}')
    after=$(cpu "${pid[$p]}")
    awk -v r="$r" -v l="${label[$p]}" -v n="$n" -v t=$((after - before)) \
      'BEGIN{printf "round %s %-8s requests %d cpu_us_per_request %.2f\n", r, l, n, t*1000000/100/n}'
  done
done
