#!/usr/bin/env bash
# Test strength of the decision modules, measured with cargo-mutants: the
# breaker, the bulkhead, the fault plan, steady state and the replay model.
# A surviving mutant is a missing test (or, rarely, an equivalent one: note
# it). Not part of .ci/run: a full run takes about an hour on 2 cores.
#
# Usage: bash bench/mutants.sh [MODULE...]   (default: all of them)
#   MODULE: breaker | bulkhead | plan | steady | replay
# Needs: cargo install cargo-mutants --locked
# Output: mutants.out/ per module under target/mutants/, and one summary
# line per module ("N mutants tested: M missed, C caught, U unviable").
set -euo pipefail
cd "$(dirname "$0")/.."
command -v cargo-mutants >/dev/null || {
  echo "mutants: install cargo-mutants first (cargo install cargo-mutants --locked)" >&2
  exit 2
}
declare -A files=(
  [breaker]="src/defense/breaker/machine.rs src/defense/breaker/window.rs src/defense/breaker/consecutive.rs src/defense/breaker/ratio.rs src/defense/breaker/rolling.rs src/defense/breaker/outcome.rs"
  [bulkhead]="src/defense/bulkhead.rs"
  [plan]="src/fault/plan/mod.rs src/fault/window.rs src/fault/matcher.rs"
  [steady]="src/experiment/steady.rs"
  [replay]="src/trace/model.rs src/fault/replay.rs"
)
declare -A tests=(
  [breaker]="--lib"
  [bulkhead]="--lib"
  [plan]="--lib --test proxy_faults --test runtime_faults"
  [steady]="--lib --test steady_state"
  [replay]="--lib --test replay"
)
modules=("$@")
[ ${#modules[@]} -gt 0 ] || modules=(breaker bulkhead plan steady replay)
for module in "${modules[@]}"; do
  [ -n "${files[$module]:-}" ] || { echo "mutants: unknown module $module" >&2; exit 2; }
  args=()
  for f in ${files[$module]}; do args+=(--file "$f"); done
  out=target/mutants/$module
  mkdir -p "$out"
  # shellcheck disable=SC2086 # the test list is words
  cargo mutants "${args[@]}" -o "$out" -- ${tests[$module]} >"$out/log.txt" 2>&1 || true
  echo "$module: $(tail -1 "$out/log.txt")"
done
