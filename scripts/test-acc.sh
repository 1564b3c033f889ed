#!/usr/bin/env bash
# Runs every TestAcc* once under one CLI (terraform = 1.5.7, the oldest
# supported; tofu = OpenTofu; terraform-latest = the newest 1.x, which runs
# its share: latest_tests below) against the real test API server, prints a
# one-line summary, and fails when a test failed, when none ran, or when any
# was skipped: skipped acceptance tests are not coverage.
#
# Given several CLIs (scripts/test-acc.sh terraform terraform-latest tofu),
# it runs their passes' jobs from one pool (below) and prints each pass's
# output and summary, in the order given.
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
# Their test binaries, linked into build/test by scripts/go-test.sh (only
# those that changed; make test's test-bin has linked them already) and
# run by every pass from there: build/test/<last path element>.test.
# The plan-time tests (resource.UnitTest: no cluster, no TF_ACC needed) that
# make unit runs under Terraform 1.5.7 run under each pass's CLI too: its own
# diagnostics wrap and word the errors they match. Only packages without
# acceptance tests (internal/provider's function tests use resource.UnitTest
# too, and run with the acceptance tests).
mapfile -t plan_pkgs < <(comm -23 <(grep -rl --include='*_test.go' 'resource\.UnitTest(' . | xargs -n1 dirname | sort -u) <(printf '%s\n' "${pkgs[@]}"))
testbin=build/test
if [ -z "${KMSHEALTH_ACC_TESTBIN_READY:-}" ]; then
  scripts/go-test.sh -c "${pkgs[@]}" "${plan_pkgs[@]}"
  export KMSHEALTH_ACC_TESTBIN_READY=1
fi
[ $# -ge 1 ] || { echo "usage: $0 terraform|terraform-latest|tofu [...]" >&2; exit 2; }
for c in "$@"; do
  case "$c" in
  terraform | terraform-latest | tofu) bash tools/install.sh "$c" >/dev/null ;; # each CLI built once, before the runs
  *) echo "$0: unknown CLI $c (terraform, terraform-latest or tofu)" >&2; exit 2 ;;
  esac
done
KMSHEALTH_KUBE_TESTSERVER=$(bash tools/install.sh kube-testserver)
# The real kube-rbac-proxy the rbac proxy sidecar's end-to-end test runs:
# the default image's release, and v0.19.1, the oldest whose flags it knows.
KMSHEALTH_KUBE_RBAC_PROXY=$(bash tools/install.sh kube-rbac-proxy)
KMSHEALTH_KUBE_RBAC_PROXY_V019=$(bash tools/install.sh kube-rbac-proxy-v0.19)
export KMSHEALTH_KUBE_TESTSERVER KMSHEALTH_KUBE_RBAC_PROXY KMSHEALTH_KUBE_RBAC_PROXY_V019
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/empty.tfrc"
root=$PWD
TIMEFORMAT='%U %S' # run_pkg's CPU time
# The tests run the CLI through a wrapper that turns its garbage collector
# off below a 1 GiB heap: a pass starts the CLI about 2,000 times, each
# process lives a fraction of a second and frees nothing worth collecting.
# In one alternating run (the TestAccAPIServiceCABundle_ tests, 504 CLI
# processes per run, two runs each way) the CLI processes took 9.3 and
# 10.8 CPU-s with the collector off against 15.6 and 12.1 with it on. It
# execs the CLI, so the process the tests start (and the kill test kills)
# is the CLI itself, and the providers it starts inherit the setting.
for cli in "$@"; do
  bin=$(bash tools/install.sh "$cli")
  mkdir -p "$tmp/$cli/cli"
  printf '#!/bin/sh\nGOGC=off GOMEMLIMIT=1GiB exec "%s" "$@"\n' "$bin" >"$tmp/$cli/cli/$(basename "$bin")"
  chmod +x "$tmp/$cli/cli/$(basename "$bin")"
  echo "$tmp/$cli/cli/$(basename "$bin")" >"$tmp/$cli/wrapper"
  TF_CLI_CONFIG_FILE="$tmp/empty.tfrc" CHECKPOINT_DISABLE=1 "$bin" version | sed -n 1p >"$tmp/$cli/version"
done
# cli_env sets up, in a job's subshell, the environment of a pass under
# CLI $1: the tests find the CLI (the wrapper above) and, for OpenTofu,
# the registry its provider addresses name.
cli_env() {
  export TF_ACC=1 TF_ACC_TERRAFORM_PATH="$(cat "$tmp/$1/wrapper")" TF_CLI_CONFIG_FILE="$tmp/empty.tfrc" CHECKPOINT_DISABLE=1
  if [ "$1" = tofu ]; then
    export TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org
  fi
}
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
# The newest Terraform's pass runs what needs it (the provider functions),
# TestAccPod_reconcilerDocumentedMaximum (above), and one lifecycle test of
# each resource, data source and the provider (create, update, import,
# drift, destroy under the newest CLI): the whole suite runs under 1.5.7,
# the oldest supported, and OpenTofu, and the newest CLI's parse of every
# example and module is examples-check's. A full third pass was a third of
# make test's CPU (BENCHMARKS.md, "The newest Terraform's share").
# KMSHEALTH_ACC_LATEST=all runs every test under it; KMSHEALTH_ACC_RUN
# narrows every pass alike.
latest_tests=(APIServiceCABundle_secretSource APIServiceCABundle_inline
  WebhookCABundle_validatingNamedInline WebhookCABundle_crdConversion
  TLSProfile_static RBACProxySidecar_deployment Reconciler_basic
  Reconciler_update Reporter_basic KMSPluginHealth_healthy
  KMSKeyUsage_forbidden KMSReencryption_gate Provider_explicitAttributes)
latest_run="^TestAcc(Function_.*|$(IFS='|'; echo "${latest_tests[*]}"))\$"
latest_pod_test=Pod_reconcilerDocumentedMaximum # its package's only test under the newest CLI
latest_pod_run="^TestAcc$latest_pod_test\$"
narrow() {
  [ "$1" = terraform-latest ] && [ -z "${KMSHEALTH_ACC_RUN:-}" ] && [ "${KMSHEALTH_ACC_LATEST:-}" != all ]
}
skip_for() {
  case "$1" in
  terraform) echo '^TestAccFunction|^TestAccModule_tofuTest$|^TestAccPod_reconcilerDocumentedMaximum$' ;;
  terraform-latest) echo '^TestAccModule_tofuTest$' ;;
  tofu) echo '^TestAccPod_reconcilerDocumentedMaximum$' ;;
  esac
}
note_for() {
  case "$1" in
  terraform) echo " (TestAccFunction_* not run: $(cat "$tmp/$1/version") has no provider functions; they run under terraform-latest and tofu; TestAccModule_tofuTest runs in the tofu pass, TestAccPod_reconcilerDocumentedMaximum in the terraform-latest pass)" ;;
  terraform-latest)
    if narrow "$1"; then
      echo " (the provider functions, TestAccPod_reconcilerDocumentedMaximum and one lifecycle test of each resource, data source and the provider; every test runs under Terraform 1.5.7 and OpenTofu; KMSHEALTH_ACC_LATEST=all runs them all here too)"
    else
      echo " (TestAccModule_tofuTest runs in the tofu pass)"
    fi
    ;;
  tofu) echo " (TestAccPod_reconcilerDocumentedMaximum runs in the terraform-latest pass)" ;;
  esac
}
# KMSHEALTH_ACC_RUN narrows the run to the tests a -test.run pattern
# matches (a subset under every CLI while working on it; make test never
# sets it).
# -parallel 1 (KMSHEALTH_ACC_PARALLEL overrides it): the tests that share
# nothing call t.Parallel, but the pool below already keeps both cores
# busy, and each test run beside another in the same job only adds to what
# the cores switch between. make acc took 745 s and 1,256 CPU-s at 1
# against 829 s and 1,418 CPU-s at 2 (same pool of three, one run each).
#
# run_pkg runs one package's test binary, in the package's directory as go
# test does, with -test.run $2 and -test.skip $3 (each may be empty), into
# its own log (CLI $4's, named $5), ending with go test's "ok"/"FAIL" line and the
# CPU time the binary and every process it waited for took (its control
# planes, the CLIs, the reconcilers and reporters it ran; not what a node's
# containerd ran): bash's time, user + system. The passes share two cores,
# so CPU time, not wall time, says which shard costs the run what.
run_pkg() {
  local p=$1 run=$2 skip=$3 log=$5 started rc cpu args=()
  started=$SECONDS
  [ -n "$run" ] && args+=(-test.run "$run")
  [ -n "$skip" ] && args+=(-test.skip "$skip")
  { time { (cd "$p" && "$root/$testbin/$(basename "$p").test" "${args[@]}" -test.count=1 -test.v \
    -test.parallel "${KMSHEALTH_ACC_PARALLEL:-1}" -test.timeout 40m) >"$tmp/$4/log.$log" 2>&1; }; } 2>"$tmp/$4/cpu.$log"
  rc=$?
  cpu=$(awk 'END { printf "%.0f", $1 + $2 }' "$tmp/$4/cpu.$log") # time's line is the last
  if [ "$rc" -eq 0 ]; then
    echo "ok  	$p ($log)	$((SECONDS - started))s	$cpu CPU-s" >>"$tmp/$4/log.$log"
  else
    echo "FAIL	$p ($log)	$((SECONDS - started))s	$cpu CPU-s (exit $rc)" >>"$tmp/$4/log.$log"
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
# The jobs: for each CLI, the package's main shard, its isolated shard,
# each other package with acceptance tests, and each package of plan-time
# tests; a job is "<cli> <shard>", the shard main, isolated, a package or
# plan:<package>. They run from one pool of KMSHEALTH_ACC_JOBS (3) at a
# time (a few more while cores stand idle, below), longest first, as `go
# test -p 3` would run packages. Every job starts its own API servers (and,
# for the pod tests, its own node).
#
# Why a pool and not the three passes at once, each with its own three
# slots: on two cores the same tests cost more CPU the more run at once.
# make acc took 947 s and 1,800 CPU-s with the passes side by side (nine
# jobs at once, each test binary at -parallel 2), 829 s and 1,418 CPU-s
# from a pool of three at -parallel 2, and 745 s and 1,256 CPU-s at
# -parallel 1 (BENCHMARKS.md, "make test on two cores").
#
# est prints a job's seconds alone on this project's 2-core test machine
# (2026-12-02), only to order the pool: the longest jobs start first, so
# that the short ones fill in at the end. The terraform-latest pass's pod
# tests include TestAccPod_reconcilerDocumentedMaximum.
est() {
  case "$2" in
  main) if narrow "$1"; then echo 60; else echo 290; fi ;;
  isolated) echo 200 ;;
  ./internal/provider/podtest) if narrow "$1"; then echo 140; elif [ "$1" = terraform-latest ]; then echo 235; else echo 110; fi ;;
  plan:*) echo 8 ;;
  *) echo 70 ;;
  esac
}
jobs=()
for cli in "$@"; do
  if narrow "$cli"; then
    jobs+=("$cli main" "$cli ./internal/provider/podtest")
    for p in "${plan_pkgs[@]}"; do jobs+=("$cli plan:$p"); done
    continue
  fi
  jobs+=("$cli main")
  [ -n "${KMSHEALTH_ACC_RUN:-}" ] || jobs+=("$cli isolated")
  for p in "${pkgs[@]}"; do
    [ "$p" = ./internal/provider ] || jobs+=("$cli $p")
  done
  for p in "${plan_pkgs[@]}"; do jobs+=("$cli plan:$p"); done
done
mapfile -t pending < <(for j in "${jobs[@]}"; do echo "$(est $j) $j"; done | sort -s -k1,1 -rn | cut -d' ' -f2-)
# The packages whose tests read the release rehearsal: a job of one of
# them starts once the rehearsal's build has ended, unless nothing else is
# left to start (it then waits for the build itself, wait_rehearsal).
rehearsal_pkgs=()
for p in "${pkgs[@]}"; do
  if grep -q '^func TestAccRelease_rehearsal(' "$p"/*_test.go; then rehearsal_pkgs+=("$p"); fi
done
reads_rehearsal() {
  local r
  for r in "${rehearsal_pkgs[@]}"; do [ "$1" = "$r" ] && return 0; done
  return 1
}
ready() {
  [ -z "$rehearsal_pid" ] || [ -e build/rehearsal.rc ] || ! reads_rehearsal "${1#* }"
}
# job_name prints the name of a job's log and status files: provider,
# provider-isolated, plan-<package> or the package's name.
job_name() {
  case "$1" in
  main) echo provider ;;
  isolated) echo provider-isolated ;;
  plan:*) echo "plan-$(basename "${1#plan:}")" ;;
  *) basename "$1" ;;
  esac
}
# job runs one job in a subshell of its own, with its CLI's environment,
# into $tmp/<cli>/log.<name>, and writes its exit status to
# $tmp/<cli>/rc.<name> last.
job() {
  local cli=${1%% *} shard=${1#* } skip name rc=0
  skip=$(skip_for "$cli")
  name=$(job_name "$shard")
  cli_env "$cli"
  case "$shard" in
  main)
    if narrow "$cli"; then
      run_pkg ./internal/provider "$latest_run" "$skip" "$cli" "$name" || rc=1
    elif [ -n "${KMSHEALTH_ACC_RUN:-}" ]; then
      run_pkg ./internal/provider "$run" "$skip" "$cli" "$name" || rc=1
    else
      run_pkg ./internal/provider "$run" "${skip:+$skip|}$isolated_run" "$cli" "$name" || rc=1
    fi
    ;;
  isolated)
    run_pkg ./internal/provider "$isolated_run" "$skip" "$cli" "$name" || rc=1
    ;;
  plan:*)
    run_pkg "${shard#plan:}" "" "" "$cli" "$name" || rc=1
    ;;
  *)
    if reads_rehearsal "$shard" && ! wait_rehearsal >"$tmp/$cli/log.$name" 2>&1; then
      echo "FAIL	$shard ($cli $name)	the release rehearsal's build failed" >>"$tmp/$cli/log.$name"
      echo 1 >"$tmp/$cli/rc.$name"
      return
    fi
    if narrow "$cli"; then
      run_pkg "$shard" "$latest_pod_run" "$skip" "$cli" "$name" || rc=1
    else
      run_pkg "$shard" "$run" "$skip" "$cli" "$name" || rc=1
    fi
    ;;
  esac
  echo "$rc" >"$tmp/$cli/rc.$name"
  echo "$SECONDS" >"$tmp/$cli/end.$name"
}
slots=${KMSHEALTH_ACC_JOBS:-3}
# One more job may start, up to KMSHEALTH_ACC_MAX_JOBS (slots + 2), after
# 10 s in which a third of a core or more stood idle (Linux: from
# /proc/stat; elsewhere the pool stays at slots). Late in make test, when
# integration and node have ended, the jobs left mostly wait (API server
# restarts, key rotations, rollouts) and three of them kept 1.4 to 1.6 of
# the two cores busy; earlier the cores are full and nothing more starts.
most=${KMSHEALTH_ACC_MAX_JOBS:-$((slots + 2))}
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
stat_total='' stat_free='' idle=''
# sample_idle sets idle to the hundredths of a core idle on average since
# its last call (empty on the first, or without /proc/stat).
sample_idle() {
  idle=''
  [ -r /proc/stat ] || return 0
  local cpu user nice sys free iow irq sirq steal rest total
  read -r cpu user nice sys free iow irq sirq steal rest </proc/stat
  total=$((user + nice + sys + free + iow + irq + sirq + steal)) free=$((free + iow))
  if [ -n "$stat_total" ] && [ "$total" -gt "$stat_total" ]; then
    idle=$((ncpu * 100 * (free - stat_free) / (total - stat_total)))
  fi
  stat_total=$total stat_free=$free
}
start=$SECONDS
set +e
running=() pids=() limit=$slots tick=''
sample_idle
while [ ${#pending[@]} -gt 0 ] || [ ${#running[@]} -gt 0 ]; do
  while [ ${#running[@]} -lt "$limit" ] && [ ${#pending[@]} -gt 0 ]; do
    pick=''
    for i in "${!pending[@]}"; do
      if ready "${pending[$i]}"; then pick=$i; break; fi
    done
    if [ -z "$pick" ]; then
      [ ${#running[@]} -eq 0 ] || break
      pick=0
    fi
    job "${pending[$pick]}" &
    running+=("${pending[$pick]}")
    pids+=($!)
    unset 'pending[$pick]'
    pending=("${pending[@]}")
  done
  if [ -z "$tick" ]; then
    sleep 10 &
    tick=$!
  fi
  wait -n # a job ended, the rehearsal's build, or the 10 s tick
  still=() alive=()
  for i in "${!running[@]}"; do
    j=${running[$i]}
    cli=${j%% *} name=$(job_name "${j#* }")
    if [ ! -e "$tmp/$cli/rc.$name" ] && ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "FAIL	${j#* } ($cli $name)	ended without a status" >>"$tmp/$cli/log.$name"
      echo 1 >"$tmp/$cli/rc.$name"
    fi
    if [ ! -e "$tmp/$cli/rc.$name" ]; then
      still+=("$j")
      alive+=("${pids[$i]}")
    fi
  done
  running=(${still[@]+"${still[@]}"}) pids=(${alive[@]+"${alive[@]}"})
  if ! kill -0 "$tick" 2>/dev/null; then
    tick=''
    sample_idle
    limit=$slots
    if [ -n "$idle" ] && [ "$idle" -ge 33 ] && [ ${#running[@]} -ge "$slots" ] && [ ${#running[@]} -lt "$most" ]; then
      limit=$((${#running[@]} + 1))
      echo "acc: $((SECONDS - start))s: $idle/100 of a core idle over 10 s: a job more (${#running[@]} running)" >>"$tmp/pool.log"
    fi
  fi
done
[ -z "$tick" ] || kill "$tick" 2>/dev/null
[ ! -s "$tmp/pool.log" ] || cat "$tmp/pool.log"
status=0
end_rehearsal >"$tmp/rehearsal.out" 2>&1 || status=1
# One summary per CLI, in the order given, as each pass's own run would
# print it: every job's verdict lines, then the counts.
for cli in "$@"; do
  : >"$tmp/$cli/log"
  : >"$tmp/$cli/plan"
  for f in "$tmp/$cli"/log.*; do
    case "$f" in
    */log.plan-*) cat "$f" >>"$tmp/$cli/plan" ;;
    *) cat "$f" >>"$tmp/$cli/log" ;;
    esac
  done
  cat "$tmp/$cli/plan" >>"$tmp/$cli/log"
  failed_jobs=$(grep -L '^0$' "$tmp/$cli"/rc.* | wc -l)
  iso_passed=$(grep -c '^--- PASS: TestAcc' "$tmp/$cli/log.provider-isolated" 2>/dev/null)
  if narrow "$cli"; then
    # Every named test must have passed (a renamed one would otherwise run
    # nowhere under the newest CLI), and the functions at least once.
    for t in "${latest_tests[@]}" "$latest_pod_test"; do
      if ! grep -q "^--- PASS: TestAcc$t " "$tmp/$cli/log"; then
        echo "TestAcc$t did not pass under $cli (it is in test-acc.sh's latest_tests)" >>"$tmp/$cli/log"
        failed_jobs=$((failed_jobs + 1))
      fi
    done
    if ! grep -q '^--- PASS: TestAccFunction_' "$tmp/$cli/log"; then
      echo "no TestAccFunction_ test passed under $cli" >>"$tmp/$cli/log"
      failed_jobs=$((failed_jobs + 1))
    fi
  elif [ -z "${KMSHEALTH_ACC_RUN:-}" ] && [ "${iso_passed:-0}" -ne "${#isolated[@]}" ]; then
    echo "the isolated shard did not pass its ${#isolated[@]} tests ($isolated_run)" >>"$tmp/$cli/log"
    failed_jobs=$((failed_jobs + 1))
  fi
  grep -E '^(--- (PASS|FAIL|SKIP)|ok |FAIL|panic:)' "$tmp/$cli/log"
  passed=$(grep -c '^--- PASS: TestAcc' "$tmp/$cli/log")
  failed=$(grep -c '^--- FAIL' "$tmp/$cli/log")
  # A package that panicked (a test timing out is a panic) has no FAIL line
  # for the test that was running.
  panicked=$(grep -c '^panic:' "$tmp/$cli/log")
  skipped=$(grep -c -- '--- SKIP' "$tmp/$cli/log")
  planned=$(grep -c '^--- PASS: Test' "$tmp/$cli/plan")
  last=$(cat "$tmp/$cli"/end.* 2>/dev/null | sort -n | tail -1)
  took=$((${last:-$SECONDS} - start))
  echo "acceptance under $(cat "$tmp/$cli/version"): $passed passed, $failed failed, $panicked panicked or timed out, $skipped skipped (and $planned plan-time tests passed) in ${took}s$(note_for "$cli")"
  if [ "$failed_jobs" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$panicked" -ne 0 ]; then
    echo "--- full log ---"; cat "$tmp/$cli/log"
    status=1
  elif [ "$passed" -eq 0 ] || [ "$planned" -eq 0 ] || [ "$skipped" -ne 0 ]; then
    echo "acceptance tests did not all run under $cli: none passed or some were skipped" >&2
    status=1
  fi
done
cat "$tmp/rehearsal.out"
exit "$status"
