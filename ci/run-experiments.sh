#!/usr/bin/env bash
# Runs every experiment in a folder in virtual time, one JUnit file each, and
# fails when any of them fails. Both ci/github-actions.yml and
# ci/gitlab-ci.yml call it; copy it next to them in your repository.
#
#   bash ci/run-experiments.sh [EXPERIMENTS_DIR] [REPORTS_DIR]
#
# EXPERIMENTS_DIR (default `experiments`): every *.yaml / *.yml directly in
#   it is run; subfolders are not (experiments/gameday/ is a real-time drill).
# REPORTS_DIR (default `reports`): each experiment NAME gets
#   REPORTS_DIR/NAME/junit.xml, report.json and journal.jsonl
#   (`firedrill run --report-dir`). An experiment that could not run at all
#   (exit 2: invalid file, 3: run failed) gets a junit.xml with one failing
#   test case holding the error, so the CI report shows it too.
# FIREDRILL (default `firedrill` on PATH): the binary.
#
# Exit code: 0 when every experiment held, 1 when any did not, 2 when the
# folder holds no experiment, 130 when interrupted.
set -uo pipefail

dir=${1:-experiments}
out=${2:-reports}
firedrill=${FIREDRILL:-firedrill}

shopt -s nullglob
files=("$dir"/*.yaml "$dir"/*.yml)
shopt -u nullglob
if [ ${#files[@]} -eq 0 ]; then
  echo "run-experiments: no *.yaml or *.yml in $dir" >&2
  exit 2
fi
mapfile -t files < <(printf '%s\n' "${files[@]}" | LC_ALL=C sort)

xml_escape() {
  sed -e 's/&/\&amp;/g' -e 's/</\&lt;/g' -e 's/>/\&gt;/g' -e 's/"/\&quot;/g'
}

mkdir -p "$out"
failed=()
for file in "${files[@]}"; do
  name=$(basename "$file")
  name=${name%.*}
  mkdir -p "$out/$name"
  echo "::: $file"
  "$firedrill" run "$file" --clock virtual --report-dir "$out/$name" 2> "$out/$name/stderr.txt"
  code=$?
  cat "$out/$name/stderr.txt" >&2
  case $code in
    0) ;;
    130)
      echo "run-experiments: interrupted" >&2
      exit 130
      ;;
    1) failed+=("$file (exit 1: an expectation failed or a halt condition fired)") ;;
    *)
      failed+=("$file (exit $code: the experiment could not run)")
      message=$(xml_escape < "$out/$name/stderr.txt")
      cat > "$out/$name/junit.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="firedrill" tests="1" failures="0" errors="1">
    <testsuite name="$(printf '%s' "$file" | xml_escape)" tests="1" failures="0" errors="1">
        <testcase name="the experiment runs" classname="firedrill.$(printf '%s' "$name" | xml_escape)">
            <error message="firedrill run exited $code">$message</error>
        </testcase>
    </testsuite>
</testsuites>
EOF
      ;;
  esac
done

echo
if [ ${#failed[@]} -eq 0 ]; then
  echo "run-experiments: all ${#files[@]} experiment(s) held"
  exit 0
fi
echo "run-experiments: ${#failed[@]} of ${#files[@]} experiment(s) failed:"
printf '  %s\n' "${failed[@]}"
exit 1
