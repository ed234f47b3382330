#!/usr/bin/env bash
# test-summary.sh LOG: one summary of a `cargo test --no-fail-fast` log:
# per test binary that ran, its passed and failed counts, then every
# failed test under the binary it belongs to. Exit 0 always: the caller
# keeps cargo's own status.
set -euo pipefail
awk '
  /^     Running / { bin = $2; sub(/^.*\//, "", bin); sub(/-[0-9a-f]+\)?$/, "", bin); binaries++ }
  /^   Doc-tests / { bin = "doc-tests " $2; binaries++ }
  /^test .* \.\.\. FAILED$/ { failed[++n] = bin ": " $2 }
  /^test result: / {
    for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) }
  }
  END {
    print ""
    print "=== test summary ==="
    printf "%d test binaries ran: %d tests passed, %d failed\n", binaries, p, f
    for (i = 1; i <= n; i++) print "FAILED " failed[i]
    if (n == 0 && f == 0) print "every test passed"
  }
' "$1"
