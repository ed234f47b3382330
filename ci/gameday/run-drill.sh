#!/usr/bin/env bash
# Runs the game-day drill in real time against staging. Called by
# ci/gameday/github-actions.yml, ci/gameday/gitlab-ci.yml and ci/gameday/crontab.
#
#   STAGING_URL=https://staging.internal:8443/api bash ci/gameday/run-drill.sh [REPORT_DIR]
#
# STAGING_URL (required): http://host:port or https://host[:port] of the
#   staging service, optionally with a path prefix put before every request
#   path (https://staging.internal/api), from a CI variable. The drill names
#   it as ${STAGING_URL}; firedrill replaces variables from the environment
#   when it reads the file. A copy of the drill as written goes to
#   REPORT_DIR/drill.yaml (report.json names the target it ran against).
# REPORT_DIR (default `gameday-report`): the copy, report.json, junit.xml,
#   journal.jsonl (`firedrill run --report-dir`).
# FIREDRILL_DRILL (default experiments/gameday/staging-drill.yaml): the drill,
#   holding the placeholder ${STAGING_URL} as its target.url.
# FIREDRILL (default `firedrill` on PATH): the binary.
# STAGING_CA_FILE (optional, https): PEM file of the CA that signed staging's
#   certificate, when the system's roots do not hold it.
# STAGING_CLIENT_CERT, STAGING_CLIENT_KEY (optional, https): PEM files of the
#   client certificate and its key, when staging requires mTLS.
#
# Exit code: firedrill's: 0 held, 1 an expectation failed or a halt condition
# fired (faults removed first, partial report written), 2 invalid input
# (also a missing or malformed STAGING_URL), 3 the run failed (staging
# unreachable at start), 130 interrupted.
set -euo pipefail

out=${1:-gameday-report}
drill=${FIREDRILL_DRILL:-experiments/gameday/staging-drill.yaml}
firedrill=${FIREDRILL:-firedrill}

url=${STAGING_URL:-}
if [ -z "$url" ]; then
  echo "run-drill: set STAGING_URL to the staging service, http://host:port or https://host[:port][/prefix]" >&2
  exit 2
fi
if ! [[ $url =~ ^(http://[A-Za-z0-9.-]+:[0-9]+|https://[A-Za-z0-9.-]+(:[0-9]+)?)(/[A-Za-z0-9._~/-]*)?$ ]]; then
  echo "run-drill: STAGING_URL \`$url\`: expected http://host:port or https://host[:port], optionally with a path prefix (/api)" >&2
  exit 2
fi
# TLS files as overrides of the drill's target.tls (absolute paths).
tls=()
for setting in ca_file:STAGING_CA_FILE client_cert:STAGING_CLIENT_CERT client_key:STAGING_CLIENT_KEY; do
  variable=${setting#*:}
  file=${!variable:-}
  if [ -n "$file" ]; then
    tls+=(--set "target.tls.${setting%%:*}=$(realpath -m -- "$file")")
  fi
done
if ! grep -q '\${STAGING_URL' "$drill"; then
  echo "run-drill: $drill does not use \${STAGING_URL}" >&2
  exit 2
fi

mkdir -p "$out"
cp "$drill" "$out/drill.yaml"
echo "run-drill: $drill against $url, reports in $out"
STAGING_URL=${url%/} exec "$firedrill" run "$drill" --clock real --report-dir "$out" ${tls[@]+"${tls[@]}"}
