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
# only read it. It builds in the background (an image and two goreleaser
# runs, 1-3 minutes after a change): the passes start meanwhile, and the
# package that holds the rehearsal test, which runs after another in its
# slot, waits for the build (wait_rehearsal). The build holds an exclusive
# flock on build/rehearsal.lock until it has written its exit status; a
# waiter takes a shared one. Without flock(1) (macOS) it builds first.
rehearsal_pid=''
if [ -z "${KMSHEALTH_RELEASE_REHEARSAL:-}" ]; then
  export KMSHEALTH_RELEASE_REHEARSAL="$PWD/build/rehearsal"
  if command -v flock >/dev/null; then
    mkdir -p build
    rm -f build/rehearsal.rc
    exec 9>build/rehearsal.lock
    flock -x 9
    (
      rc=0
      go run ./internal/cmd/rehearse -out build/rehearsal >build/rehearsal.log 2>&1 9>&- || rc=$?
      echo "$rc" >build/rehearsal.rc
    ) &
    rehearsal_pid=$!
    exec 9>&- # the build's subshell holds the lock now
    export KMSHEALTH_REHEARSAL_LOCK="$PWD/build/rehearsal.lock"
  else
    go run ./internal/cmd/rehearse -out build/rehearsal
  fi
fi
# wait_rehearsal returns once the background build of the rehearsal has
# ended, and fails, with its output, when it failed.
wait_rehearsal() {
  [ -n "${KMSHEALTH_REHEARSAL_LOCK:-}" ] || return 0
  flock -s "$KMSHEALTH_REHEARSAL_LOCK" true
  local dir=${KMSHEALTH_REHEARSAL_LOCK%/*} rc
  rc=$(cat "$dir/rehearsal.rc" 2>/dev/null || echo "no status")
  if [ "$rc" != 0 ]; then
    echo "the release rehearsal's build (go run ./internal/cmd/rehearse) failed ($rc):"
    cat "$dir/rehearsal.log"
    return 1
  fi
}
# end_rehearsal waits for the build this process started, if any, so that
# nothing is left running, prints its output, and fails when it failed
# (also when no test that reads it ran).
end_rehearsal() {
  [ -n "$rehearsal_pid" ] || return 0
  wait "$rehearsal_pid"
  cat build/rehearsal.log
  [ "$(cat build/rehearsal.rc 2>/dev/null)" = 0 ]
}
# Only the packages that have acceptance tests: every other package's
# TestMain would start an API server for nothing.
mapfile -t pkgs < <(grep -rl --include='*_test.go' '^func TestAcc' . | xargs -n1 dirname | sort -u)
# Their test binaries, linked once for every pass into build/test (go test
# links each package again on every run, about 6 s of CPU for
# internal/provider's alone; `go test -c` leaves an up-to-date binary as
# it is).
# The plan-time tests (resource.UnitTest: no cluster, no TF_ACC needed) that
# make unit runs under Terraform 1.5.7 run under each pass's CLI too: its own
# diagnostics wrap and word the errors they match. Only packages without
# acceptance tests (internal/provider's function tests use resource.UnitTest
# too, and run with the acceptance tests).
mapfile -t plan_pkgs < <(comm -23 <(grep -rl --include='*_test.go' 'resource\.UnitTest(' . | xargs -n1 dirname | sort -u) <(printf '%s\n' "${pkgs[@]}"))
testbin=build/test
if [ -z "${KMSHEALTH_ACC_TESTBIN_READY:-}" ]; then
  mkdir -p "$testbin"
  go test -c -o "$testbin/" "${pkgs[@]}" "${plan_pkgs[@]}"
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
  end_rehearsal || rc=1
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
# The tests run the CLI through a wrapper that turns its garbage collector
# off below a 1 GiB heap: a pass starts the CLI about 2,000 times, each
# process lives a fraction of a second and frees nothing worth collecting.
# In one alternating run (the TestAccAPIServiceCABundle_ tests, 504 CLI
# processes per run, two runs each way) the CLI processes took 9.3 and
# 10.8 CPU-s with the collector off against 15.6 and 12.1 with it on. It
# execs the CLI, so the process the tests start (and the kill test kills)
# is the CLI itself, and the providers it starts inherit the setting.
cli_path=$tmp/cli/$(basename "$bin")
mkdir -p "$tmp/cli"
printf '#!/bin/sh\nGOGC=off GOMEMLIMIT=1GiB exec "%s" "$@"\n' "$bin" >"$cli_path"
chmod +x "$cli_path"
export TF_ACC=1 TF_ACC_TERRAFORM_PATH="$cli_path" TF_CLI_CONFIG_FILE="$tmp/empty.tfrc" CHECKPOINT_DISABLE=1
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
skip='' note=""
case "$cli" in
terraform)
  skip='^TestAccFunction|^TestAccModule_tofuTest$|^TestAccPod_reconcilerDocumentedMaximum$'
  note=" (TestAccFunction_* not run: $version has no provider functions; they run under terraform-latest and tofu; TestAccModule_tofuTest runs in the tofu pass, TestAccPod_reconcilerDocumentedMaximum in the terraform-latest pass)"
  ;;
terraform-latest)
  skip='^TestAccModule_tofuTest$'
  note=" (TestAccModule_tofuTest runs in the tofu pass)"
  ;;
tofu)
  skip='^TestAccPod_reconcilerDocumentedMaximum$'
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
#
# run_pkg runs one package's test binary, in the package's directory as go
# test does, with -test.run $2 and -test.skip $3 (each may be empty), into
# its own log (named $4), ending with go test's "ok"/"FAIL" line.
run_pkg() {
  local p=$1 run=$2 skip=$3 log=$4 started rc args=()
  started=$SECONDS
  [ -n "$run" ] && args+=(-test.run "$run")
  [ -n "$skip" ] && args+=(-test.skip "$skip")
  (cd "$p" && "$root/$testbin/$(basename "$p").test" "${args[@]}" -test.count=1 -test.v \
    -test.parallel "${KMSHEALTH_ACC_PARALLEL:-2}" -test.timeout 40m) >"$tmp/log.$log" 2>&1
  rc=$?
  if [ "$rc" -eq 0 ]; then
    echo "ok  	$p ($log)	$((SECONDS - started))s" >>"$tmp/log.$log"
  else
    echo "FAIL	$p ($log)	$((SECONDS - started))s (exit $rc)" >>"$tmp/log.$log"
  fi
  return "$rc"
}
# The tests that change what the whole API server shows (they rotate the
# KMS key and restart kube-apiserver, or install OpenShift's cluster-scoped
# APIs, which turns is_openshift true for every profile while they exist)
# run as a shard of their own: the same test binary again, with its own
# TestMain and so its own API server, beside the rest of the package. They
# were a third of the package's serial time (mostly waiting for
# kube-apiserver to take a key), and a parallel one of them raced the
# others' is_openshift. The main shard skips exactly these; this one must
# pass every one of them (a renamed test would otherwise run nowhere).
isolated=(KMSKeyUsage_retire KMSReencryption_rotation KMSReencryption_killed
  TLSProfile_cluster Reconciler_keepsTLSProfiles KMSPluginHealth_openshiftTyped)
isolated_run="^TestAcc($(IFS='|'; echo "${isolated[*]}"))\$"
run=${KMSHEALTH_ACC_RUN:-^TestAcc}
root=$PWD
# Three slots, as `go test -p 3` would fill them: the package's main shard
# on one, the isolated shard on the second, the other packages one after
# another on the third.
slot() {
  local rc=0 p
  case "$1" in
  main)
    if [ -n "${KMSHEALTH_ACC_RUN:-}" ]; then
      run_pkg ./internal/provider "$run" "$skip" provider || rc=1
    else
      run_pkg ./internal/provider "$run" "${skip:+$skip|}$isolated_run" provider || rc=1
    fi
    ;;
  isolated)
    [ -n "${KMSHEALTH_ACC_RUN:-}" ] || run_pkg ./internal/provider "$isolated_run" "$skip" provider-isolated || rc=1
    ;;
  rest)
    for p in "${pkgs[@]}"; do
      [ "$p" = ./internal/provider ] && continue
      if grep -q '^func TestAccRelease_rehearsal(' "$p"/*_test.go && ! wait_rehearsal >"$tmp/log.rehearsal" 2>&1; then
        rc=1
        continue
      fi
      run_pkg "$p" "$run" "$skip" "$(basename "$p")" || rc=1
    done
    ;;
  esac
  return "$rc"
}
status=0 pids=()
for s in main isolated rest; do
  slot "$s" &
  pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
end_rehearsal || status=1
cat "$tmp"/log.* >"$tmp/log" 2>/dev/null
if [ -z "${KMSHEALTH_ACC_RUN:-}" ] && [ "$(grep -c '^--- PASS: TestAcc' "$tmp/log.provider-isolated")" -ne "${#isolated[@]}" ]; then
  echo "the isolated shard did not pass its ${#isolated[@]} tests ($isolated_run)" >>"$tmp/log"
  status=1
fi
for p in "${plan_pkgs[@]}"; do
  run_pkg "$p" "" "" "plan-$(basename "$p")" || status=1
  cat "$tmp/log.plan-$(basename "$p")"
done >"$tmp/plan"
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
