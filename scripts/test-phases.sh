#!/usr/bin/env bash
# Runs make targets one after another, as make test's phases, and prints how
# long each took: a line as each ends, and all of them again at the end (or
# at the first failure, which stops the run as a prerequisite would), so a
# slow phase is seen without reading the whole log.
#   scripts/test-phases.sh make lint unit ...
# Portable: bash 3.2.
set -uo pipefail
make=${1:?usage: $0 <make> <target>...}
shift
summary=()
report() {
  echo "make test: time per phase"
  for line in "${summary[@]}"; do echo "  $line"; done
  echo "  total $((SECONDS - total))s"
}
total=$SECONDS
for target in "$@"; do
  start=$SECONDS
  "$make" --no-print-directory "$target"
  rc=$?
  took=$((SECONDS - start))
  if [ "$rc" -ne 0 ]; then
    summary+=("$(printf '%-16s %5ss  FAILED' "$target" "$took")")
    report
    exit "$rc"
  fi
  summary+=("$(printf '%-16s %5ss' "$target" "$took")")
  echo "make test: $target took ${took}s"
done
report
