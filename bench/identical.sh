#!/usr/bin/env bash
# Are two builds' virtual-time reports byte-identical? Every top-level
# experiments/*.yaml runs with `--clock virtual --json --junit --report-dir`
# under both binaries; the build string each report carries is replaced by
# `BUILD`, then `diff -r` compares the two trees.
#
# Usage: bash bench/identical.sh OLD_BINARY NEW_BINARY
#
# Prints one line per experiment and `identical: N of N`; exits 1 when a
# report differs (the diff is in $OUT/diff.txt) or a binary's exit code
# differs from the other's.
#
# Environment: OUT [bench/out/identical-<UTC time>], TIMEOUT [120] seconds
# per run.
set -euo pipefail

OLD=${1:?usage: bash bench/identical.sh OLD_BINARY NEW_BINARY}
NEW=${2:?usage: bash bench/identical.sh OLD_BINARY NEW_BINARY}
TIMEOUT=${TIMEOUT:-120}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$REPO/bench/out/identical-$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT/old" "$OUT/new"

# run BINARY SIDE NAME FILE: the reports of one run, its exit code in rc.
run() {
    local dir=$OUT/$2/$3
    mkdir -p "$dir"
    set +e
    (cd "$REPO" && timeout "$TIMEOUT" "$1" run "$4" --clock virtual --quiet \
        --json "$dir/report.json" --junit "$dir/junit.xml" --report-dir "$dir/reports" >"$dir/stdout" 2>"$dir/stderr")
    echo $? >"$dir/rc"
    set -e
    # The build string ("firedrill 0.1.0 (<commit> <date>)") is the one
    # difference two builds must have.
    local build
    build=$("$1" --version | sed 's/^firedrill //')
    grep -rlF "$build" "$dir" | xargs -r sed -i "s|$(printf '%s' "$build" | sed 's/[][\.*^$|]/\\&/g')|BUILD|g"
}

n=0 same=0
for f in "$REPO"/experiments/*.yaml; do
    name=$(basename "$f" .yaml)
    run "$OLD" old "$name" "$f"
    run "$NEW" new "$name" "$f"
    n=$((n + 1))
    if diff -r "$OUT/old/$name" "$OUT/new/$name" >>"$OUT/diff.txt" 2>&1; then
        same=$((same + 1))
        printf '%-45s identical (exit %s)\n' "$name" "$(cat "$OUT/new/$name/rc")"
    else
        printf '%-45s DIFFERENT (see %s)\n' "$name" "$OUT/diff.txt"
    fi
done
printf 'identical: %s of %s (old %s, new %s)\n' "$same" "$n" "$("$OLD" --version)" "$("$NEW" --version)"
((same == n))
