#!/usr/bin/env bash
# The README's test command: installs the real clients the tests drive
# (ci/install-test-clients.sh: Toxiproxy clients, the Prometheus and JUnit
# parsers, the services under test, Chromium, tmux), then runs the whole
# test suite: every test binary, whatever fails (--no-fail-fast). A
# missing client fails its test; no test skips. It ends with one summary:
# every failed test by binary, or that all passed. Extra arguments go to
# cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-test-clients.sh
log=$(mktemp -t firedrill-tests.XXXXXX)
trap 'rm -f "$log"' EXIT
status=0
cargo test --locked --no-fail-fast "$@" 2>&1 | tee "$log" || status=$?
bash ci/test-summary.sh "$log"
exit "$status"
