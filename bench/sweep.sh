#!/usr/bin/env bash
# Sweep throughput: `firedrill sweep` of 20 points x 5 seeds of the 60 s
# bulkhead drill (experiments/bulkhead_isolation_none.yaml, ~6,000 requests
# a run), against the baseline of the same 100 runs made one after another
# with `firedrill run --clock virtual --quiet --set ... --seed ...` (one
# process each), each timed RUNS times with hyperfine (release build;
# hyperfine is installed with apt-get when missing, unless SKIP_INSTALL=1).
#
# Usage: bash bench/sweep.sh      (about 3 minutes)
# Environment: RUNS [3] runs of each; FIREDRILL the binary (default: cargo
# build --release --locked into ./target).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
if ! command -v hyperfine >/dev/null; then
  [ "${SKIP_INSTALL:-0}" = 1 ] && { echo "missing: hyperfine (SKIP_INSTALL=1)" >&2; exit 1; }
  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y hyperfine
fi
if [ -z "${FIREDRILL:-}" ]; then
  cargo build --release --locked --quiet
  FIREDRILL=$PWD/target/release/firedrill
fi
FILE=experiments/bulkhead_isolation_none.yaml
RATES=$(seq 21 40 | sed 's|$|/s|' | paste -sd, -)
SEED=$(sed -n 's/^seed: *//p' "$FILE")

sequential=$(mktemp)
trap 'rm -f "$sequential"' EXIT
{
  echo 'set -e'
  for rate in ${RATES//,/ }; do
    for s in 0 1 2 3 4; do
      echo "$FIREDRILL run $FILE --clock virtual --quiet --set load.A.rate=$rate --seed $((SEED + s)) || [ \$? -eq 1 ]"
    done
  done
} > "$sequential"

echo "# sweep: 20 points x 5 seeds of $FILE; baseline: the same 100 runs one after another"
# A sweep exits 1 when a point's assertions fail, as a run does: both are
# timed all the same.
hyperfine --runs "$RUNS" --warmup 0 --ignore-failure --style basic \
  --command-name "sweep (one process, both cores)" \
  "$FIREDRILL sweep $FILE --vary load.A.rate=$RATES --seeds 5 --format csv" \
  --command-name "100 runs one after another" \
  "sh $sequential"
