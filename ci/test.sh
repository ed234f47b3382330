#!/usr/bin/env bash
# The README's test command: installs the real clients the tests drive
# (ci/install-test-clients.sh: Toxiproxy clients, the Prometheus and JUnit
# parsers, the services under test, Chromium, tmux), then runs the whole
# test suite: every test binary, whatever fails (--no-fail-fast). A
# missing client fails its test; no test skips. Extra arguments go to
# cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash ci/install-test-clients.sh
cargo test --locked --no-fail-fast "$@"
