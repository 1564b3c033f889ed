#!/usr/bin/env bash
# Builds one test/dev tool from the Go module proxy into a cache outside the
# checkout, keyed by version, and prints the binary's path. A warm cache costs
# nothing: the build is skipped when the binary is already there.
#
#   tools/install.sh kube-testserver|terraform|terraform-latest|tofu|kube-rbac-proxy|kube-rbac-proxy-v0.19|tfplugindocs|terraform-docs|golangci-lint|goreleaser|promtool|cainjector|terraform-provider-kubectl
#   tools/install.sh node-packages   (root, Debian/Ubuntu: the node's containerd, runc, CNI plugins,
#                                     installed without starting or enabling a host service)
set -euo pipefail

KUBE_VERSION=v1.35.4
TERRAFORM_VERSION=v1.5.7
# The newest Terraform 1.x the module proxy serves (v1.16.5 and v1.17 are not).
TERRAFORM_LATEST_VERSION=v1.16.4
TOFU_VERSION=v1.12.6
# The sidecar's default (= the require in tools/kube-rbac-proxy/go.mod and
# rbacproxy.DefaultImage), and the oldest release whose flag set the sidecar
# still speaks (= tools/kube-rbac-proxy-v0.19/go.mod), kept to prove it works.
KUBE_RBAC_PROXY_VERSION=v0.22.1
KUBE_RBAC_PROXY_V019_VERSION=v0.19.1
TFPLUGINDOCS_VERSION=v0.24.0
TERRAFORM_DOCS_VERSION=v0.20.0 # = the require in tools/terraform-docs/go.mod
GOLANGCI_LINT_VERSION=v2.15.0
# The newest goreleaser that builds with Go 1.26 (later ones need a newer Go).
GORELEASER_VERSION=v2.15.1
# promtool checks the alert rules of internal/monitoring (promtool test rules);
# the Go module version v0.316.0 is Prometheus 3.16.0.
PROMETHEUS_VERSION=v0.316.0
# bench peer's comparison: cert-manager's CA injector (= the require in
# tools/cainjector/go.mod) and gavinbunney/kubectl's kubectl_manifest
# (bench plan's reference row).
CAINJECTOR_VERSION=v1.21.2
KUBECTL_PROVIDER_VERSION=v1.19.0

here=$(cd "$(dirname "$0")" && pwd)
cache=${KMSHEALTH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kmshealth}

# Every tool's packages compile without DWARF: most tools are linked with
# -s -w, which dropped it anyway, and no tool is debugged from this cache. A
# cold build of the provider took 0.82 to 0.84 of the CPU without it
# (BENCHMARKS.md, "Cold builds without DWARF").
# GOFLAGS from the environment or go env -w stays in front.
GOFLAGS=$(go env GOFLAGS 2>/dev/null || true)
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-gcflags=all=-dwarf=false"

# key: the tool's version plus a digest of its wrapper module (if any), so an
# edited wrapper rebuilds and an unchanged one never does.
wrapper_digest() {
  (cd "$here/$1" && cat go.mod go.sum ./*.go 2>/dev/null | sha256 | cut -c1-8)
}

# sha256sum (GNU) or shasum (macOS).
sha256() {
  if command -v sha256sum >/dev/null; then sha256sum; else shasum -a 256; fi
}

build() { # name version dir-suffix build-command...
  local name=$1 version=$2 key=$3; shift 3
  local dir="$cache/$name-$version$key" bin
  bin="$dir/$name"
  if [ ! -x "$bin" ]; then
    echo "tools: building $name $version into $dir (cold build, several minutes)" >&2
    mkdir -p "$dir"
    local start=$SECONDS
    "$@" "$dir.tmp-$$" >&2
    mv "$dir.tmp-$$" "$bin"
    echo "tools: built $name in $((SECONDS - start))s" >&2
  fi
  echo "$bin"
}


# lean_cli builds Terraform or OpenTofu from its released module source (the
# Go module proxy's zip, with the module's own go.mod, go.sum and replaces)
# without what a provider's tests never reach and every start pays for:
#   - the remote-state backends (azurerm, consul, cos, gcs, kubernetes,
#     oss, pg, s3, and oci for Terraform 1.16): cloud state storage;
#   - go-getter's s3 and gcs module getters (module sources `s3::` and
#     `gcs::`; the tests install no module from anywhere): go-getter is
#     built from its own release with those two files left out and a stub
#     that answers "not in this build", so the AWS SDK's endpoint table,
#     Google Cloud Storage and OpenCensus are neither linked nor
#     initialised;
#   - for OpenTofu, the cloud key providers of state encryption (aws_kms,
#     gcp_kms, azure_vault, openbao); pbkdf2, external and the methods stay.
# Everything a provider talks to (core, the plugin protocol, local state,
# `tofu test`) is the release's own code. A provider's acceptance pass
# starts the CLI about 2,000 times, and each start maps and initialises the
# whole binary: without the backends Terraform 1.5.7 was 39 instead of 68
# MB and OpenTofu 75 instead of 115 MB, and the CLI processes of the
# TestAccAPIServiceCABundle_ tests (504 starts) took 15.1 instead of 22.4 ms
# each under 1.5.7 and 18.5 instead of 24.6 under OpenTofu (two
# alternating runs each); without the getters and key providers too, see
# BENCHMARKS.md ("CLIs without cloud plugins"). The cold build compiles
# none of those SDKs.
#   lean_cli <module> <version> <main package> <ldflags> <backends regexp> <go.mod sed script> <key providers regexp> <out>
lean_cli() {
  local module=$1 version=$2 pkg=$3 ldflags=$4 backends=$5 gomod=$6 keyproviders=$7 out=$8 src tmp getter
  case $out in /*) ;; *) out=$PWD/$out ;; esac
  go mod download "$module@$version"
  src=$(go list -m -f '{{.Dir}}' "$module@$version")
  tmp=$(mktemp -d)
  cp -r "$src/." "$tmp/" && chmod -R u+w "$tmp"
  sed -i.orig -E "/backend($backends)/d" "$tmp/internal/backend/init/init.go"
  if [ -n "$gomod" ]; then
    sed -i.orig -E "$gomod" "$tmp/go.mod"
  fi
  if [ -n "$keyproviders" ]; then
    awk -v re="$keyproviders" '
      $0 ~ "keyprovider/(" re ")\"" { next }
      $0 ~ "RegisterKeyProvider\\((" re ")\\.New" { skip = 3 }
      skip > 0 { skip--; next }
      { print }' "$tmp/internal/encryption/default_registry.go" >"$tmp/registry.go.new" &&
      mv "$tmp/registry.go.new" "$tmp/internal/encryption/default_registry.go"
  fi
  getter=$(awk '{ for (i = 1; i < NF; i++) if ($i == "github.com/hashicorp/go-getter") { print $(i + 1); exit } }' "$tmp/go.mod")
  go mod download "github.com/hashicorp/go-getter@$getter"
  mkdir -p "$tmp/.go-getter"
  cp -r "$(go list -m -f '{{.Dir}}' "github.com/hashicorp/go-getter@$getter")/." "$tmp/.go-getter/"
  chmod -R u+w "$tmp/.go-getter"
  rm -f "$tmp/.go-getter/get_s3.go" "$tmp/.go-getter/get_gcs.go" "$tmp/.go-getter"/*_test.go
  cat >"$tmp/.go-getter/get_cloud_absent.go" <<'GO'
package getter

import (
	"errors"
	"net/url"
)

// The s3 and gcs getters are left out of this build (kmshealth's
// tools/install.sh): these stand in for them, so the getter table and the
// callers that name them compile, and a module source that needs one fails.
var errCloudGetterAbsent = errors.New("this build of the CLI has no s3 or gcs module getter")

type S3Getter struct{ getter }

type GCSGetter struct{ getter }

func (g *S3Getter) ClientMode(*url.URL) (ClientMode, error) { return 0, errCloudGetterAbsent }
func (g *S3Getter) Get(string, *url.URL) error               { return errCloudGetterAbsent }
func (g *S3Getter) GetFile(string, *url.URL) error           { return errCloudGetterAbsent }

func (g *GCSGetter) ClientMode(*url.URL) (ClientMode, error) { return 0, errCloudGetterAbsent }
func (g *GCSGetter) Get(string, *url.URL) error               { return errCloudGetterAbsent }
func (g *GCSGetter) GetFile(string, *url.URL) error           { return errCloudGetterAbsent }
GO
  (cd "$tmp" && go mod edit -replace github.com/hashicorp/go-getter=./.go-getter &&
    go build -mod=mod -trimpath -ldflags "$ldflags" -o "$out" "$pkg") || { rm -rf "$tmp"; return 1; }
  rm -rf "$tmp"
}

# go_install <go install arguments...> <out>: go install into a temporary
# GOBIN, removed afterwards, and the one binary it made to <out>.
go_install() {
  local out=${!#} tmp rc=0
  tmp=$(mktemp -d)
  GOBIN=$tmp go install "${@:1:$#-1}" && mv "$tmp"/* "$out" || rc=$?
  rm -rf "$tmp"
  return "$rc"
}

case "${1:-}" in
kube-testserver)
  v=${KUBE_VERSION#v}
  ld="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=${v%%.*} -X $pkg.gitMinor=$(echo "$v" | cut -d. -f2)"
    ld="$ld -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  build kube-testserver "$KUBE_VERSION" "-$(wrapper_digest kube-testserver)" \
    bash -c 'cd "$0/kube-testserver" && go build -trimpath -ldflags "$1" -o "$2" .' "$here" "$ld"
  ;;
terraform)
  build terraform "$TERRAFORM_VERSION" "-lean" \
    lean_cli github.com/hashicorp/terraform "$TERRAFORM_VERSION" . "-s -w" \
    "Azure|Consul|Cos|GCS|Kubernetes|OSS|Pg|S3" "" ""
  ;;
terraform-latest)
  # Since 1.7 Terraform's go.mod also requires those backends and
  # internal/legacy as nested modules at v0.0.0 with local replaces, which
  # are never published: neither `go install pkg@version` nor a wrapper
  # module could resolve them, so its go.mod loses them too.
  build terraform "$TERRAFORM_LATEST_VERSION" "-lean" \
    lean_cli github.com/hashicorp/terraform "$TERRAFORM_LATEST_VERSION" . \
    "-s -w -X github.com/hashicorp/terraform/version.dev=no" "Azure|Consul|Cos|GCS|Kubernetes|OCI|OSS|Pg|S3" \
    "/github.com\/hashicorp\/terraform\/internal\/(backend\/remote-state\/(azure|consul|cos|gcs|kubernetes|oss|pg|s3|oci)|legacy)( |$)/d" ""
  ;;
tofu)
  build tofu "$TOFU_VERSION" "-lean" \
    lean_cli github.com/opentofu/opentofu "$TOFU_VERSION" ./cmd/tofu \
    "-s -w -X github.com/opentofu/opentofu/version.dev=no" "Azure|Consul|Cos|GCS|Kubernetes|OSS|Pg|S3" "" \
    "aws_kms|gcp_kms|azure_vault|openbao"
  ;;
kube-rbac-proxy | kube-rbac-proxy-v0.19)
  # One wrapper module per release line (tools/kube-rbac-proxy for the
  # default, tools/kube-rbac-proxy-v0.19 for the oldest supported flag set),
  # each cached by its own version: v0.19.1 needs the wrapper for its go-jose
  # replace directive (go install pkg@version refuses modules with replaces),
  # v0.22.1 has none but keeps the same shape. Static, so the project's image
  # tool can package the same binary as the sidecar image.
  version=$KUBE_RBAC_PROXY_VERSION
  [ "$1" = kube-rbac-proxy ] || version=$KUBE_RBAC_PROXY_V019_VERSION
  ld="-s -w -X k8s.io/component-base/version.gitVersion=$version"
  ld="$ld -X k8s.io/component-base/version/verflag.programName=kube-rbac-proxy"
  build kube-rbac-proxy "$version" "-$(wrapper_digest "$1")" \
    bash -c 'cd "$0/$1" && CGO_ENABLED=0 go build -trimpath -ldflags "$2" -o "$3" github.com/brancz/kube-rbac-proxy/cmd/kube-rbac-proxy' "$here" "$1" "$ld"
  ;;
tfplugindocs)
  build tfplugindocs "$TFPLUGINDOCS_VERSION" "" \
    go_install -trimpath github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs@$TFPLUGINDOCS_VERSION
  ;;
terraform-docs)
  # Generates the inputs and outputs of modules/*/README.md. Wrapper module:
  # go install pkg@version asks the proxy for the module's version list,
  # which it does not serve for terraform-docs.
  build terraform-docs "$TERRAFORM_DOCS_VERSION" "-$(wrapper_digest terraform-docs)" \
    bash -c 'cd "$0/terraform-docs" && go build -trimpath -ldflags "-s -w" -o "$1" github.com/terraform-docs/terraform-docs' "$here"
  ;;
golangci-lint)
  build golangci-lint "$GOLANGCI_LINT_VERSION" "" \
    go_install -trimpath github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$GOLANGCI_LINT_VERSION
  ;;
goreleaser)
  build goreleaser "$GORELEASER_VERSION" "" \
    go_install -trimpath -ldflags "-s -w" github.com/goreleaser/goreleaser/v2@$GORELEASER_VERSION
  ;;
promtool)
  # Only the command-line tool, and without Prometheus's service-discovery
  # plugins (build tag remove_all_sd: the cloud SDKs are most of its
  # dependency tree, and `check rules`/`test rules` use none of them).
  build promtool "$PROMETHEUS_VERSION" "-nosd" \
    go_install -trimpath -tags remove_all_sd -ldflags "-s -w" github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION
  ;;
cainjector)
  # cert-manager's command is the nested module .../cmd/cainjector, which
  # the module proxy does not serve; the wrapper runs the released module's
  # pkg/controller/cainjector (its reconcilers and watches) in the same
  # controller-runtime Manager the command builds (tools/cainjector/main.go).
  build cainjector "$CAINJECTOR_VERSION" "-$(wrapper_digest cainjector)" \
    bash -c 'cd "$0/cainjector" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$1" .' "$here"
  ;;
terraform-provider-kubectl)
  # gavinbunney/kubectl, for bench plan's kubectl_manifest reference row;
  # the bench installs it with dev_overrides (no registry is reachable).
  build terraform-provider-kubectl "$KUBECTL_PROVIDER_VERSION" "" \
    go_install -trimpath -ldflags "-s -w" github.com/gavinbunney/terraform-provider-kubectl@$KUBECTL_PROVIDER_VERSION
  ;;
node-packages)
  # The node test bed's container runtime, from the distribution (the
  # control plane and kubelet are kube-testserver). The test bed runs its
  # own containerd (own config, root, state and socket, in its own
  # namespaces: internal/testenv/node_linux.go) and needs nothing of the
  # host's but the binaries: containerd and ctr, runc, the CNI plugins in
  # /usr/lib/cni, iptables and ip; and GnuPG (gpg, gpg-agent), which signs
  # the release rehearsal's checksums (internal/cmd/rehearse). Only what is
  # missing is installed (a host that has Docker's containerd.io keeps it),
  # and no host service is
  # started or enabled: Debian's containerd package would start containerd
  # on install and enable it at boot.
  missing=""
  { command -v containerd && command -v ctr; } >/dev/null || missing="$missing containerd"
  command -v runc >/dev/null || missing="$missing runc"
  { [ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ]; } || missing="$missing containernetworking-plugins"
  command -v iptables >/dev/null || missing="$missing iptables"
  command -v ip >/dev/null || missing="$missing iproute2"
  { command -v gpg && command -v gpg-agent; } >/dev/null || missing="$missing gpg gpg-agent"
  if [ -z "$missing" ]; then
    command -v containerd
    exit 0
  fi
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "tools: the node test bed needs$missing; install them as root (apt-get install$missing) or run make test as root on Debian or Ubuntu" >&2
    exit 1
  fi
  echo "tools: installing$missing with apt-get, starting and enabling no service" >&2
  start=$SECONDS
  # policy-rc.d answering 101 ("action forbidden") makes the packages'
  # maintainer scripts (invoke-rc.d, deb-systemd-invoke) start nothing for
  # the duration of the install; an existing policy-rc.d is put back after.
  policy=/usr/sbin/policy-rc.d
  saved=""
  if [ -e "$policy" ]; then
    saved=$(mktemp)
    cp -p "$policy" "$saved"
  fi
  restore_policy() {
    if [ -n "$saved" ]; then mv -f "$saved" "$policy"; else rm -f "$policy"; fi
  }
  trap restore_policy EXIT
  printf '#!/bin/sh\n# tools/install.sh node-packages: no service starts while it installs.\nexit 101\n' >"$policy"
  chmod 0755 "$policy"
  export DEBIAN_FRONTEND=noninteractive
  # shellcheck disable=SC2086 # one word per package
  if ! apt-get install -y -q --no-install-recommends $missing >&2; then
    apt-get update -q >&2 && apt-get install -y -q --no-install-recommends $missing >&2
  fi
  # The postinst enabled containerd.service at boot. Disable it as an
  # administrator would (systemctl disable works without a running systemd);
  # a later package upgrade sees it disabled and keeps it so.
  case " $missing " in
  *" containerd "*)
    if command -v systemctl >/dev/null; then
      systemctl disable containerd.service >&2
    else
      rm -f /etc/systemd/system/multi-user.target.wants/containerd.service
    fi
    ;;
  esac
  restore_policy
  trap - EXIT
  echo "tools: installed$missing in $((SECONDS - start))s (containerd.service neither started nor enabled)" >&2
  command -v containerd
  ;;
*)
  echo "usage: $0 kube-testserver|terraform|terraform-latest|tofu|kube-rbac-proxy|tfplugindocs|terraform-docs|golangci-lint|goreleaser|promtool|cainjector|terraform-provider-kubectl|node-packages" >&2
  exit 2
  ;;
esac
