#!/usr/bin/env bash
# Installs the real Toxiproxy clients and the Prometheus text parser that
# tests/api_clients.rs drives against `firedrill server`:
#   * Python: toxiproxy-python + prometheus-client into tests/clients/python/.venv
#   * Node:   toxiproxy-node-client into tests/clients/node/node_modules (npm ci,
#             from the committed package-lock.json)
# and the circuit-breaker libraries of the small services in tests/services/
# that firedrill's tests drive black-box:
#   * Python: pybreaker into tests/services/pybreaker/.venv
#   * Node:   opossum into tests/services/opossum/node_modules (npm ci)
# Needs python3 (with venv) and npm. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=tests/clients/python/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/clients/python/requirements.txt
"$venv/bin/python" -c 'import toxiproxy, prometheus_client.parser'

(cd tests/clients/node && npm ci --no-audit --no-fund --loglevel=error)
node -e 'require("./tests/clients/node/node_modules/toxiproxy-node-client")'

venv=tests/services/pybreaker/.venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/services/pybreaker/requirements.txt
"$venv/bin/python" -c 'import pybreaker'

(cd tests/services/opossum && npm ci --no-audit --no-fund --loglevel=error)
node -e 'require("./tests/services/opossum/node_modules/opossum")'
echo "test clients installed"
