#!/usr/bin/env bash
# Virtual-time experiments: wall time, CPU time, requests simulated per
# second and peak memory of `firedrill run X.yaml --clock virtual --quiet`
# for every file in experiments/ (release build).
#
# Usage: bash bench/experiments.sh      (about 1 minute with the defaults)
#
# Each experiment runs $RUNS times in a row, pinned to core $CPU, timed like
# /usr/bin/time -v but finer (a small python wrapper: wall from a monotonic
# clock, user/sys/max RSS from wait4's rusage). The requests of a run are the sum
# of routes[].requests of its `--json` report (the report of a seed is
# byte-identical from run to run, which is checked). Figures are medians of
# the runs; max RSS is the largest. The 1-minute load average is recorded at
# each run: on a shared machine the wall time stretches with the load while
# the CPU time (user + sys) does not, so both are reported.
#
# The target: the bulkhead scenario (bulkhead_isolation_none.yaml,
# 60 s, ~6,000 requests) under 1 s wall. With PROFILE=1 (and `perf`
# working) the slowest experiment is also recorded with `perf record -g` and
# the top of `perf report` is written to $OUT/perf-top.txt.
#
# Environment (defaults in brackets):
#   RUNS [5]          runs per experiment; medians are reported
#   CPU [1]           the core the runs are pinned to
#   FIREDRILL         the binary; default: `cargo build --release --locked`
#                     into $CARGO_TARGET_DIR (or ./target); with PROFILE=1
#                     `--profile profiling` (the release code with symbols and
#                     line tables, which perf needs; the release binary is
#                     stripped), so pass a profiling build here then
#   BUILD [1]         0: never run cargo
#   TIMEOUT [60]      seconds after which one run is killed
#   PROFILE [0]       1: perf profile of the slowest experiment
#   OUT               result directory [bench/out/experiments-<UTC timestamp>]
#   APPEND [0]        1: append the result section to BENCHMARKS.md
set -euo pipefail

RUNS=${RUNS:-5}
CPU=${CPU:-1}
BUILD=${BUILD:-1}
TIMEOUT=${TIMEOUT:-60}
PROFILE=${PROFILE:-0}
APPEND=${APPEND:-0}

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=${OUT:-$REPO/bench/out/experiments-$STAMP}
mkdir -p "$OUT"

log() { printf '[bench-exp %s] %s\n' "$(date +%T)" "$*" >&2; }
die() { log "error: $*"; exit 1; }
if [[ ! -x /usr/bin/time ]]; then # GNU time, for the peak memory
    [[ ${SKIP_INSTALL:-0} == 1 ]] && die "need GNU time at /usr/bin/time (SKIP_INSTALL=1)"
    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y time
fi
for t in taskset timeout python3 sha256sum; do command -v "$t" >/dev/null || die "need $t"; done

if [[ -z ${FIREDRILL:-} ]]; then
    TGT=${CARGO_TARGET_DIR:-$REPO/target}
    CARGO_PROFILE=release
    if ((PROFILE)); then CARGO_PROFILE=profiling; fi
    if ((BUILD)); then
        log "building firedrill ($CARGO_PROFILE) into $TGT"
        (cd "$REPO" && CARGO_TARGET_DIR=$TGT cargo build --profile "$CARGO_PROFILE" --locked) >"$OUT/build.log" 2>&1 ||
            die "cargo build failed, see $OUT/build.log"
    fi
    FIREDRILL=$TGT/$CARGO_PROFILE/firedrill
fi
"$FIREDRILL" run --help >/dev/null 2>&1 || die "'$FIREDRILL run' is not available"

# Every run is a child of this shell with a timeout; nothing outlives it.
TMP=$(mktemp -d "${TMPDIR:-/tmp}/firedrill-bench-exp.XXXXXX")
# timed.py TIMEFILE TIMEOUT CMD...: runs CMD, writes "wall user sys maxrss_kb"
# (wall from a monotonic clock, user/sys from wait4's rusage: µs resolution,
# unlike /usr/bin/time's 10 ms) and exits with CMD's status (124 on
# timeout, the child is killed). Max RSS comes from GNU time (`%M`) run
# between the two: a child forked from python inherits python's ~13 MB as
# its ru_maxrss high-water mark, GNU time's own is ~2 MB, below firedrill's.
cat >"$TMP/timed.py" <<'PY'
import os, signal, subprocess, sys, time
out, limit, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
rss = out + ".rss"
t0 = time.perf_counter()
child = subprocess.Popen(["/usr/bin/time", "-q", "-f", "%M", "-o", rss, "--"] + cmd,
                         start_new_session=True)
def expire(*_):
    os.killpg(child.pid, signal.SIGKILL)
    os.wait4(child.pid, 0)
    sys.exit(124)
signal.signal(signal.SIGALRM, expire)
signal.alarm(limit)
_, status, ru = os.wait4(child.pid, 0)
wall = time.perf_counter() - t0
signal.alarm(0)
maxrss = open(rss).read().split()[-1]
open(out, "w").write(f"{wall:.4f} {ru.ru_utime:.4f} {ru.ru_stime:.4f} {maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(status))
PY
PIDS=()
cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

RAW=$OUT/raw.tsv
printf 'experiment\trun\texit\twall_s\tuser_s\tsys_s\tmaxrss_kb\trequests\tvirtual_s\tloadavg1\n' >"$RAW"

json_figures() { # report.json -> "requests virtual_seconds"
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(r["requests"] for r in d["routes"]), d["duration_ms"]/1000)' "$1"
}

mapfile -t FILES < <(ls "$REPO"/experiments/*.yaml)
log "${#FILES[@]} experiments x $RUNS runs, pinned to core $CPU"
for file in "${FILES[@]}"; do
    name=$(basename "$file" .yaml)
    first_sum=""
    for r in $(seq "$RUNS"); do
        la=$(cut -d' ' -f1 /proc/loadavg)
        json=$OUT/$name-r$r.json
        rc=0
        taskset -c "$CPU" python3 "$TMP/timed.py" "$OUT/$name-r$r.time" "$TIMEOUT" \
            "$FIREDRILL" run "$file" --clock virtual --quiet --json "$json" \
            >"$OUT/$name-r$r.log" 2>&1 &
        PIDS=("$!")
        wait "$!" || rc=$?
        PIDS=()
        ((rc == 124)) && die "$name: run $r timed out after ${TIMEOUT}s"
        [[ -s $json ]] || die "$name: run $r wrote no JSON report (exit $rc): $(tail -5 "$OUT/$name-r$r.log")"
        read -r wall user sys rss <"$OUT/$name-r$r.time"
        read -r reqs vsec < <(json_figures "$json")
        sum=$(sha256sum <"$json" | cut -c1-16)
        if [[ -z $first_sum ]]; then first_sum=$sum
        elif [[ $sum != "$first_sum" ]]; then log "warning: $name: run $r's JSON report differs from run 1's"; fi
        ((r == 1)) || rm -f "$json"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$r" "$rc" "$wall" "$user" "$sys" "$rss" "$reqs" "$vsec" "$la" >>"$RAW"
        log "$name r$r: exit $rc, ${wall}s wall, ${user}+${sys}s CPU, ${rss} KB, $reqs requests, load $la"
    done
done

# ---------------------------------------------------------------- report
commit=$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)
python3 - "$RAW" "$RUNS" "$CPU" "$commit" >"$OUT/results.md" <<'PY'
import csv, statistics, sys, datetime
raw, runs, cpu, commit = sys.argv[1:]
rows = list(csv.DictReader(open(raw), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["experiment"], []).append(r)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")
print(f"### {now}, commit {commit}\n")
print(f"`bash bench/experiments.sh` (RUNS={runs}, pinned to core {cpu}, release build, "
      "`firedrill run experiments/X.yaml --clock virtual --quiet --json R`; medians of the runs, "
      "max RSS is the largest; simulated req/s = requests in the JSON report / median wall seconds).\n")
print("| experiment | exit | virtual s | requests | wall s (median, min–max) | CPU s user+sys (median) | simulated req/s (wall) | simulated req/s (CPU) | virtual/wall | max RSS MB | load avg 1 min (runs) |")
print("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|")
tot_req = tot_wall = tot_cpu = 0.0
for name, rs in by.items():
    wall = [float(r["wall_s"]) for r in rs]
    cpu_s = [float(r["user_s"]) + float(r["sys_s"]) for r in rs]
    reqs = int(rs[0]["requests"]); vsec = float(rs[0]["virtual_s"])
    w = statistics.median(wall); c = statistics.median(cpu_s)
    rss = max(int(r["maxrss_kb"]) for r in rs) / 1024
    la = [float(r["loadavg1"]) for r in rs]
    exits = sorted({r["exit"] for r in rs})
    tot_req += reqs; tot_wall += w; tot_cpu += c
    rate_w = f"{reqs / w:,.0f}" if w > 0 else "—"
    rate_c = f"{reqs / c:,.0f}" if c > 0 else "—"
    speed = f"{vsec / w:,.0f}×" if w > 0 else "—"
    print(f"| {name} | {'/'.join(exits)} | {vsec:g} | {reqs} | {w:.3f} ({min(wall):.3f}–{max(wall):.3f}) | {c:.3f} | "
          f"{rate_w} | {rate_c} | {speed} | {rss:.1f} | {min(la):.2f}–{max(la):.2f} |")
print(f"\nAll experiments: {int(tot_req)} requests in {tot_wall:.2f} s wall ({tot_req / tot_wall:,.0f} req/s), "
      f"{tot_cpu:.2f} s CPU ({tot_req / tot_cpu:,.0f} req/s). Wall and CPU times from wait4 (µs resolution).")
b = by.get("bulkhead_isolation_none")
if b:
    w = statistics.median(float(r["wall_s"]) for r in b)
    verdict = "meets" if w < 1 else "MISSES"
    print(f"\nBulkhead scenario (bulkhead_isolation_none, target < 1 s wall): {w:.2f} s median wall, {verdict} the target.")
PY
cat "$OUT/results.md"

if ((PROFILE)); then
    if command -v perf >/dev/null && perf stat -e task-clock true >/dev/null 2>&1; then
        slow=$(awk -F'\t' 'NR>1{s[$1]+=$4} END{for(k in s) print s[k], k}' "$RAW" | sort -gr | head -1 | cut -d' ' -f2)
        log "perf record: $slow"
        taskset -c "$CPU" timeout "$TIMEOUT" perf record -F 4999 -g -o "$OUT/perf.data" -- \
            "$FIREDRILL" run "$REPO/experiments/$slow.yaml" --clock virtual --quiet >/dev/null 2>&1 || true
        perf report -i "$OUT/perf.data" --no-children --percent-limit 1.5 --stdio -g none \
            >"$OUT/perf-top.txt" 2>/dev/null || log "warning: perf report failed"
        perf report -i "$OUT/perf.data" --children --percent-limit 5 --stdio -g none \
            >"$OUT/perf-children.txt" 2>/dev/null || true
        log "profile of $slow in $OUT/perf-top.txt"
    else
        log "warning: perf is not usable here; try valgrind --tool=callgrind on a short run"
    fi
fi
if ((APPEND)); then
    printf '\n' >>"$REPO/BENCHMARKS.md"
    cat "$OUT/results.md" >>"$REPO/BENCHMARKS.md"
    log "appended to $REPO/BENCHMARKS.md"
fi
log "raw results in $OUT"
