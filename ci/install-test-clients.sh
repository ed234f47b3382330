#!/usr/bin/env bash
# Installs the real Toxiproxy clients and the Prometheus text parser that
# tests/api_clients.rs drives against `firedrill server`:
#   * Python: toxiproxy-python + prometheus-client into tests/clients/python/.venv
#   * Node:   toxiproxy-node-client into tests/clients/node/node_modules (npm ci,
#             from the committed package-lock.json)
# and the circuit-breaker libraries of the small services in tests/services/
# that firedrill's tests drive black-box:
#   * Python: pybreaker into tests/services/pybreaker/.venv
#   * Node:   opossum into tests/services/opossum/node_modules (npm ci), also
#             driven call by call on a fake clock by tests/opossum_fidelity.rs
# and a real gRPC stack, grpcio, into tests/services/grpc/.venv: the server
# and client tests/grpc.rs drives through firedrill
# and Locust 2.47 into tests/clients/locust/.venv: the distributed load
# tests/locust.rs drives a drill with (a master and two workers)
# and prometheus-client into tests/services/checkout/.venv: the service
# whose own metrics tests/prometheus.rs judges a drill by
# and from Debian's packages (installed with apt-get when missing): headless
# Chromium, which tests/html_report.rs opens report.html in, tmux, the
# terminal tests/live_view.rs watches the live panel in, and PostgreSQL,
# the shared history tests/history.rs records drills in, and Prometheus,
# which tests/prometheus.rs starts to scrape the service under test and
# judge its query sentences.
# Needs python3 (with venv) and npm. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

# python_env DIR MODULE: a venv in DIR/.venv with DIR/requirements.txt.
python_env() {
  local venv=$1/.venv
  if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
  fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$1/requirements.txt"
  "$venv/bin/python" -c "import $2"
}

# node_env DIR MODULE: DIR/node_modules from the committed package-lock.json.
node_env() {
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
  node -e "require('./$1/node_modules/$2')"
}

python_env tests/clients/python 'toxiproxy, prometheus_client.parser'
node_env tests/clients/node toxiproxy-node-client
python_env tests/services/pybreaker pybreaker
python_env tests/services/grpc grpc
python_env tests/clients/locust locust
python_env tests/services/checkout prometheus_client
node_env tests/services/opossum opossum
# Debian packages the tests need, installed when their command is missing.
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
# PostgreSQL's server, which tests/history.rs starts a cluster of.
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v prometheus >/dev/null 2>&1 || missing+=(prometheus)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
chromium --version
tmux -V
ls /usr/lib/postgresql/*/bin/initdb
prometheus --version 2>&1 | head -1
echo "test clients installed"
