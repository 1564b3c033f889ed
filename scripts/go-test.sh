#!/usr/bin/env bash
# Runs Go test packages as `go test -count=1` does, from test binaries kept
# in build/test, so that a run over an unchanged tree links nothing.
#
#   scripts/go-test.sh [-c] [-p N] [-run RE] [-skip RE] [-timeout D] [-no-skips] package...
#
# go test links every package's test binary again on each -count=1 run:
# linking the 35 test binaries of make unit, integration, node and acc took
# 96 CPU-s (51 s) on the project's 2-core machine, against 5 CPU-s (3 s) for
# `go test -c` to find every one of them up to date (BENCHMARKS.md, "make
# test on two cores"). So this script builds with `go test -c -o build/test/`,
# which links only what changed, then runs each binary in its package's
# directory with -test.count=1, at most -p (2, go test's default on two
# cores) at once, and prints go test's lines: "ok" with the seconds, or the
# package's whole output and "FAIL"; "?" for a package without tests. It
# fails when any package failed.
#
# -c only builds. A binary is build/test/<last path element>.test (the name
# go test -c gives it; scripts/test-acc.sh runs the acceptance packages'
# from there), or, for an element two packages of the module share,
# build/test/<package directory, / as _>/<element>.test.
#
# -no-skips fails a package in which any test skipped itself (t.Skip),
# naming it: make integration and make node run tests on real parts, and a
# test that skips there is not coverage (make unit keeps go test's default,
# where a skip passes: a test of an ELF binary skips off Linux).
#
# go test's own vet step is not run: make lint runs go vet on every package.
# Portable: bash 3.2 and BSD tools.
set -euo pipefail
cd "$(dirname "$0")/.."
usage() {
  echo "usage: $0 [-c] [-p N] [-run RE] [-skip RE] [-timeout D] [-no-skips] package..." >&2
  exit 2
}
build_only='' jobs=2 run='' skip='' timeout=10m no_skips=
while [ $# -gt 0 ]; do
  case "$1" in
  -c) build_only=1 ;;
  -p) jobs=${2:?}; shift ;;
  -run) run=${2?}; shift ;;
  -skip) skip=${2?}; shift ;;
  -timeout) timeout=${2:?}; shift ;;
  -no-skips) no_skips=1 ;;
  -*) usage ;;
  *) break ;;
  esac
  shift
done
[ $# -gt 0 ] || usage

# Each package: import path, directory relative to the module, and t when
# it has tests. go list also fails here on a package that does not exist.
list=$(go list -f '{{.ImportPath}}	{{.Dir}}	{{if or .TestGoFiles .XTestGoFiles}}t{{end}}' "$@" |
  while IFS='	' read -r pkg dir tests; do printf '%s\t.%s\t%s\n' "$pkg" "${dir#"$PWD"}" "$tests"; done)
shared=$(go list ./... | awk -F/ '{ print $NF }' | sort | uniq -d)
bin_of() { # import path, directory -> binary
  local base=${1##*/}
  if printf '%s\n' "$shared" | grep -qxF "$base"; then
    echo "build/test/$(printf '%s' "${2#./}" | tr / _)/$base.test"
  else
    echo "build/test/$base.test"
  fi
}

# Build: one go invocation for every binary with a name of its own, one for
# each of the others.
plain=() own=()
while IFS='	' read -r pkg dir tests; do
  [ "$tests" = t ] || continue
  bin=$(bin_of "$pkg" "$dir")
  case "$bin" in
  build/test/*/*) own+=("$pkg") ;;
  *) plain+=("$pkg") ;;
  esac
done <<EOF
$list
EOF
mkdir -p build/test
[ ${#plain[@]} -eq 0 ] || go test -c -o build/test/ "${plain[@]}"
for pkg in ${own[@]+"${own[@]}"}; do
  dir=$(printf '%s\n' "$list" | awk -F'	' -v p="$pkg" '$1 == p { print $2 }')
  out=$(dirname "$(bin_of "$pkg" "$dir")")
  mkdir -p "$out"
  go test -c -o "$out/" "$pkg"
done
[ -z "$build_only" ] || exit 0

# Run: each package in a job of its own (xargs -P), its output kept in a
# file and printed whole when it ends.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run_one() {
  local pkg=$1 dir=$2 bin=$3 log started rc args=()
  log="$tmp/$(printf '%s' "$pkg" | tr / _).log"
  [ -z "$run" ] || args+=(-test.run "$run")
  [ -z "$skip" ] || args+=(-test.skip "$skip")
  [ -z "$no_skips" ] || args+=(-test.v) # the SKIP lines
  started=$SECONDS
  rc=0
  (cd "$dir" && "$root/$bin" -test.paniconexit0 -test.count=1 -test.timeout "$timeout" ${args[@]+"${args[@]}"}) \
    >"$log" 2>&1 </dev/null || rc=$?
  if [ "$rc" -eq 0 ] && [ -n "$no_skips" ] && grep -q -- '--- SKIP' "$log"; then
    echo "$pkg: a test skipped itself; on real parts a skip is not coverage (fix what it needs, or move it to make unit)"
    rc=1
  fi
  if [ "$rc" -eq 0 ]; then
    printf 'ok  \t%s\t%ss\n' "$pkg" "$((SECONDS - started))"
  else
    cat "$log"
    printf 'FAIL\t%s\t%ss (exit %s)\n' "$pkg" "$((SECONDS - started))" "$rc"
    return 1
  fi
}
root=$PWD
export -f run_one
export tmp root run skip timeout no_skips
: >"$tmp/jobs"
status=0
while IFS='	' read -r pkg dir tests; do
  if [ "$tests" = t ]; then
    printf '%s\n%s\n%s\n' "$pkg" "$dir" "$(bin_of "$pkg" "$dir")" >>"$tmp/jobs"
  else
    printf '?   \t%s\t[no test files]\n' "$pkg"
  fi
done <<EOF
$list
EOF
xargs -n 3 -P "$jobs" bash -c 'run_one "$@"' _ <"$tmp/jobs" || status=1
exit "$status"
