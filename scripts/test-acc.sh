#!/usr/bin/env bash
# Runs every TestAcc* once under one CLI (terraform = 1.5.7, the oldest
# supported; terraform-latest = the newest 1.x; tofu = OpenTofu) against the real
# test API server, prints a one-line summary, and fails when a test failed,
# when none ran, or when any was skipped: skipped acceptance tests are not
# coverage.
#
# Given several CLIs (scripts/test-acc.sh terraform terraform-latest tofu), it runs them at
# the same time, each with its own API servers, and prints each one's
# output when it is done: the acceptance tests mostly wait on the CLIs and
# the API server, so several runs share the two cores well.
set -euo pipefail
cd "$(dirname "$0")/.."
# The release the rehearsal test (TestAccRelease_rehearsal) installs: built
# once, by goreleaser from .goreleaser.yaml, for every pass. The passes
# only read it.
if [ -z "${KMSHEALTH_RELEASE_REHEARSAL:-}" ]; then
  go run ./internal/cmd/rehearse -out build/rehearsal
  export KMSHEALTH_RELEASE_REHEARSAL="$PWD/build/rehearsal"
fi
# Only the packages that have acceptance tests: every other package's
# TestMain would start an API server for nothing.
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func TestAcc' . | xargs -n1 dirname | sort -u)
# Their test binaries, linked once for every pass into build/test (go test
# links each package again on every run, about 6 s of CPU for
# internal/provider's alone; `go test -c` leaves an up-to-date binary as
# it is).
testbin=build/test
if [ -z "${KMSHEALTH_ACC_TESTBIN_READY:-}" ]; then
  mkdir -p "$testbin"
  go test -c -o "$testbin/" "${pkgs[@]}"
  export KMSHEALTH_ACC_TESTBIN_READY=1
fi
if [ $# -gt 1 ]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  for c in "$@"; do bash tools/install.sh "$c" >/dev/null; done # build each CLI once, before the runs
  clis=("$@") pids=()
  for c in "$@"; do
    "$0" "$c" >"$out/$c" 2>&1 &
    pids+=($!)
  done
  rc=0
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || rc=1
    cat "$out/${clis[$i]}"
  done
  exit "$rc"
fi
cli=${1:?usage: $0 terraform|terraform-latest|tofu [...]}
bin=$(bash tools/install.sh "$cli")
KMSHEALTH_KUBE_TESTSERVER=$(bash tools/install.sh kube-testserver)
# The real kube-rbac-proxy the rbac proxy sidecar's end-to-end test runs:
# the default image's release, and v0.19.1, the oldest whose flags it knows.
KMSHEALTH_KUBE_RBAC_PROXY=$(bash tools/install.sh kube-rbac-proxy)
KMSHEALTH_KUBE_RBAC_PROXY_V019=$(bash tools/install.sh kube-rbac-proxy-v0.19)
export KMSHEALTH_KUBE_TESTSERVER KMSHEALTH_KUBE_RBAC_PROXY KMSHEALTH_KUBE_RBAC_PROXY_V019
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty.tfrc"
export TF_ACC=1 TF_ACC_TERRAFORM_PATH="$bin" TF_CLI_CONFIG_FILE="$tmp/empty.tfrc" CHECKPOINT_DISABLE=1
if [ "$cli" = tofu ]; then
  export TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org
fi
version=$("$bin" version | sed -n 1p)
start=$SECONDS
set +e
# Provider functions (TestAccFunction_*) need Terraform 1.8 or later
# (OpenTofu 1.7): Terraform 1.5.7 cannot even parse a provider::kmshealth::
# call. They run under terraform-latest and tofu, and are left out of the
# 1.5.7 pass by name here, not skipped inside the tests, so a SKIP line
# still fails every pass (their version check fails, never skips, on an
# older CLI).
# TestAccModule_tofuTest runs the module's own tests with `tofu test`,
# whichever CLI the pass uses: it is left out of the two Terraform passes
# by name (their OpenTofu run was the same run a third time), so it runs
# once, in the OpenTofu pass.
# TestAccPod_reconcilerDocumentedMaximum keeps 1,000 APIServices with
# reconciler pods on the real node to prove the default memory_limit holds:
# what it measures is the pod, not the CLI, and it costs minutes of CPU, so
# it runs once, in the terraform-latest pass.
skip=() note=""
case "$cli" in
terraform)
  skip=(-test.skip '^TestAccFunction|^TestAccModule_tofuTest$|^TestAccPod_reconcilerDocumentedMaximum$')
  note=" (TestAccFunction_* not run: $version has no provider functions; they run under terraform-latest and tofu; TestAccModule_tofuTest runs in the tofu pass, TestAccPod_reconcilerDocumentedMaximum in the terraform-latest pass)"
  ;;
terraform-latest)
  skip=(-test.skip '^TestAccModule_tofuTest$')
  note=" (TestAccModule_tofuTest runs in the tofu pass)"
  ;;
tofu)
  skip=(-test.skip '^TestAccPod_reconcilerDocumentedMaximum$')
  note=" (TestAccPod_reconcilerDocumentedMaximum runs in the terraform-latest pass)"
  ;;
esac
# KMSHEALTH_ACC_RUN narrows the run to the tests a -test.run pattern
# matches (a subset under every CLI while working on it; make test never
# sets it).
# -parallel 2 (KMSHEALTH_ACC_PARALLEL overrides it): the tests that share
# nothing call t.Parallel and mostly wait on the CLI and the API server.
# Alone on a quiet 2-core machine, internal/provider under Terraform 1.5.7
# took 209 s serial, 178 s at -parallel 2 and 148 s at 4; but make acc runs
# three CLIs at once, and there the passes took 716/716/743 s at 2 against
# 747/761/783 s at 4 (one run each, same commit).
# The packages run as `go test -p 2` would run them: internal/provider, by
# far the longest, on one slot and the others one after another on the
# other; each package's output is kept apart and appended whole, with go
# test's "ok"/"FAIL" line.
run_pkg() {
  local p=$1 name started rc
  name=$(basename "$p")
  started=$SECONDS
  (cd "$p" && "$root/$testbin/$name.test" -test.run "${KMSHEALTH_ACC_RUN:-^TestAcc}" "${skip[@]}" -test.count=1 -test.v \
    -test.parallel "${KMSHEALTH_ACC_PARALLEL:-2}" -test.timeout 40m) >"$tmp/log.$name" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok  	$p	$((SECONDS - started))s" >>"$tmp/log.$name"
  else
    echo "FAIL	$p	$((SECONDS - started))s (exit $rc)" >>"$tmp/log.$name"
  fi
  return "$rc"
}
root=$PWD slot1=() slot2=()
for p in "${pkgs[@]}"; do
  if [ "$p" = ./internal/provider ]; then slot1+=("$p"); else slot2+=("$p"); fi
done
status=0
(rc=0; for p in "${slot1[@]}"; do run_pkg "$p" || rc=1; done; exit $rc) &
pid1=$!
(rc=0; for p in "${slot2[@]}"; do run_pkg "$p" || rc=1; done; exit $rc) &
pid2=$!
wait "$pid1" || status=1
wait "$pid2" || status=1
for p in "${pkgs[@]}"; do cat "$tmp/log.$(basename "$p")"; done >"$tmp/log"
# The plan-time tests (resource.UnitTest: no cluster, no TF_ACC needed) that
# make unit runs under Terraform 1.5.7 run under this CLI too: its own
# diagnostics wrap and word the errors they match.
# Only packages without acceptance tests (internal/provider's function tests
# use resource.UnitTest too, and ran above).
plan_pkgs=$(comm -23 <(grep -rl --include='*_test.go' 'resource\.UnitTest(' . | xargs -n1 dirname | sort -u) <(printf '%s\n' "${pkgs[@]}"))
go test $plan_pkgs -count=1 -v -timeout 10m >"$tmp/plan" 2>&1 || status=1
cat "$tmp/plan" >>"$tmp/log"
set -e
grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' "$tmp/log" || true
passed=$(grep -c '^--- PASS: TestAcc' "$tmp/log" || true)
failed=$(grep -c '^--- FAIL' "$tmp/log" || true)
# A package that panicked (a test timing out is a panic) has no FAIL line
# for the test that was running.
panicked=$(grep -c '^panic:' "$tmp/log" || true)
skipped=$(grep -c -- '--- SKIP' "$tmp/log" || true)
planned=$(grep -c '^--- PASS: Test' "$tmp/plan" || true)
echo "acceptance under $version: $passed passed, $failed failed, $panicked panicked or timed out, $skipped skipped (and $planned plan-time tests passed) in $((SECONDS - start))s$note"
if [ "$status" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$panicked" -ne 0 ]; then
  echo "--- full log ---"; cat "$tmp/log"
  exit 1
fi
if [ "$passed" -eq 0 ] || [ "$planned" -eq 0 ] || [ "$skipped" -ne 0 ]; then
  echo "acceptance tests did not all run under $cli: none passed or some were skipped" >&2
  exit 1
fi
