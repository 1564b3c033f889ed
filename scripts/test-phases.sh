#!/usr/bin/env bash
# Runs make targets one after another, as make test's phases, and prints how
# long each took: a line as each ends, and all of them again at the end (or
# at the first failure, which stops the run as a prerequisite would), so a
# slow phase is seen without reading the whole log.
#
# A phase written a+b+c runs the targets a, b and c at the same time: each
# one's output is kept apart and printed whole when it ends, and the phase
# fails when any of them failed (after all of them ended). make test runs
# the suites that mostly wait (on API server restarts, key rotations,
# rollouts) beside the acceptance passes this way.
#   scripts/test-phases.sh make lint unit integration+node+acc ...
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

# group runs the targets of one a+b+c phase at once and prints each one's
# output and time in the order written (put the longest last: the others'
# output then shows as they end).
group() {
  local dir targets t i r took rc=0 pids=()
  dir=$(mktemp -d)
  IFS=+ read -r -a targets <<<"$1"
  for t in "${targets[@]}"; do
    (
      s=$SECONDS
      "$make" --no-print-directory "$t" >"$dir/$t.log" 2>&1
      r=$?
      echo "$r $((SECONDS - s))" >"$dir/$t.rc"
      exit "$r"
    ) &
    pids+=($!)
  done
  for i in "${!targets[@]}"; do
    t=${targets[$i]}
    wait "${pids[$i]}"
    read -r r took <"$dir/$t.rc"
    cat "$dir/$t.log"
    if [ "$r" -ne 0 ]; then
      rc=$r
      summary+=("$(printf '  %-14s %5ss  FAILED' "$t" "$took")")
    else
      summary+=("$(printf '  %-14s %5ss' "$t" "$took")")
    fi
    echo "make test: $t took ${took}s (beside the rest of $1)"
  done
  rm -rf "$dir"
  return "$rc"
}

total=$SECONDS
for target in "$@"; do
  start=$SECONDS
  case "$target" in
  *+*) group "$target" ;;
  *) "$make" --no-print-directory "$target" ;;
  esac
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
