#!/usr/bin/env bash
# Prints the Go packages of one class of tests, one per line, for make:
#   unit         no API server, no root: pure functions, fakes for what only
#                our code decides (a package is here when no test of it
#                starts a control plane)
#   integration  a real kube-apiserver + etcd on loopback, one per package
#                (testenv.Main / MainN in TestMain); no root
#   node         root on Linux: a real kubelet node in the test bed's own
#                namespaces (testenv.MainWithNode), or KMS reporters each in
#                a mount namespace of its own (devenv.StartReport), which
#                keeps the production socket path per node
# Together they are every package with tests but those that have only
# acceptance tests (make test runs all three, and make acc those).
# Portable: bash 3.2 and BSD tools.
set -euo pipefail
cd "$(dirname "$0")/.."
class=${1:?usage: $0 unit|integration|node}
module=$(go list -m)
node=$(grep -rlE --include='*_test.go' 'testenv\.MainWithNode\(|devenv\.StartReport\(' internal | xargs -n1 dirname | sort -u)
# testenv's own TestMain calls Main unqualified.
plane=$(grep -rlE --include='*_test.go' 'testenv\.Main(N|WithProvider)?\(|^func TestMain\(m \*testing\.M\) \{ Main\(' internal | xargs -n1 dirname | sort -u)
# A package whose only tests are acceptance tests (TestAcc*, make acc's)
# is in no class here: its TestMain would start a control plane for
# nothing (internal/moduletest: two API servers and "no tests to run").
acc_only() {
  local d
  for d in "$@"; do
    if ! grep -hE '^func Test[A-Z_]' "$d"/*_test.go | grep -vqE '^func Test(Acc|Main\()'; then
      echo "$d"
    fi
  done
}
only_acc=$(acc_only $plane $node)
node=$(comm -23 <(printf '%s\n' $node) <(printf '%s\n' $only_acc))
plane=$(comm -23 <(printf '%s\n' $plane) <(printf '%s\n' $only_acc))
case "$class" in
node) printf '%s\n' $node | sed "s|^|$module/|" ;;
integration) comm -23 <(printf '%s\n' $plane) <(printf '%s\n' $node) | sed "s|^|$module/|" ;;
unit) go list ./... | grep -vxF -f <(printf '%s\n' $plane $node $only_acc | sed "s|^|$module/|") ;;
*) echo "usage: $0 unit|integration|node" >&2; exit 2 ;;
esac
