#!/usr/bin/env bash
# Validates every example under examples/ and every module under modules/
# (each directory holding .tf files) with Terraform 1.5.7, the newest 1.x and OpenTofu
# (examples/functions with the newest 1.x and OpenTofu only: provider
# functions need Terraform 1.8),
# against the provider built from this checkout and reached through
# dev_overrides: no init, no registry, no download. `validate` also runs the
# provider's own validators, so a bad attribute value fails here, not only
# bad syntax or a missing file().
#
# Each example is copied to a scratch tree at the same relative path, beside
# a copy of modules/, so a call of a local module by a relative path
# (../../modules/cluster-bootstrap) resolves: `get` installs it, which only
# records a local directory. The copy has no .terraform, lock file or state
# and, when it declares no required_providers of its own, is given the block
# a user's root module has, so the kmshealth/kmshealth address resolves under
# both CLIs. A warning other than the dev_overrides notice fails the example
# too. `validate` does not check that an import (or moved) block's `to` names
# a resource the example declares, so this script does. Prints one line per
# example and check; exits non-zero when any failed.
set -euo pipefail
cd "$(dirname "$0")/.."
terraform=$(bash tools/install.sh terraform)
terraform_latest=$(bash tools/install.sh terraform-latest)
tofu=$(bash tools/install.sh tofu)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The provider, built where the next run finds it: go build leaves an
# up-to-date binary as it is instead of linking it again.
bin=$PWD/build/examples-check
go build -o "$bin/terraform-provider-kmshealth" .
cat >"$tmp/cli.tfrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/kmshealth/kmshealth" = "$bin"
    "registry.opentofu.org/kmshealth/kmshealth" = "$bin"
  }
  direct {}
}
RC
export TF_CLI_CONFIG_FILE="$tmp/cli.tfrc" TOFU_CLI_CONFIG_FILE="$tmp/cli.tfrc" CHECKPOINT_DISABLE=1 TF_IN_AUTOMATION=1

# Portable to macOS (bash 3.2, BSD find and sed): no mapfile, no find
# -printf; the directory names hold no newlines.
dirs=$(find examples modules -name '*.tf' | sed 's#/[^/]*$##' | sort -u)
if [ -z "$dirs" ]; then
  echo "no examples found under examples/" >&2
  exit 1
fi

failed=0 n=0 ndirs=0
# The list on descriptor 3, so nothing run in the loop can read it.
while IFS= read -r dir <&3; do
  ndirs=$((ndirs + 1))
  # to = <type>.<name> of import and moved blocks, each declared here.
  targets=$(sed -n 's/^[[:space:]]*to[[:space:]]*=[[:space:]]*\([A-Za-z0-9_]*\.[A-Za-z0-9_-]*\).*/\1/p' "$dir"/*.tf)
  if [ -n "$targets" ]; then
    n=$((n + 1))
    missing=""
    for t in $targets; do
      [ "${t%%.*}" = module ] && continue
      grep -Eqs "^resource \"${t%%.*}\" \"${t#*.}\"" "$dir"/*.tf || missing="$missing $t"
    done
    if [ -z "$missing" ]; then
      printf 'ok    %-9s %s\n' targets "$dir"
    else
      failed=$((failed + 1))
      printf 'FAIL  %-9s %s: no resource block for%s\n' targets "$dir" "$missing"
    fi
  fi
  for cli in terraform terraform_latest tofu; do
    # Provider functions need Terraform 1.8 or later (OpenTofu 1.7):
    # Terraform 1.5.7 cannot parse a provider::kmshealth:: call, so the
    # function examples are validated by the newest Terraform and OpenTofu
    # only.
    if [ "$cli" = terraform ] && [ "${dir#examples/functions/}" != "$dir" ]; then
      printf 'n/a   %-9s %s: provider functions need Terraform >= 1.8\n' "$cli" "$dir"
      continue
    fi
    n=$((n + 1))
    tree="$tmp/work/$n"
    work="$tree/$dir"
    mkdir -p "$work"
    cp -R "$dir/." "$work/"
    [ "${dir%%/*}" = modules ] || cp -R modules "$tree/"
    rm -rf "$work/.terraform" "$work/.terraform.lock.hcl" "$work"/terraform.tfstate*
    if ! grep -qs required_providers "$work"/*.tf; then
      cat >"$work/_examples_check.tf" <<'TF'
terraform {
  required_providers {
    kmshealth = { source = "kmshealth/kmshealth" }
  }
}
TF
    fi
    rc=0
    out=
    if grep -Eqs '^module "' "$work"/*.tf; then
      out=$(cd "$work" && "${!cli}" get -no-color 2>&1) || rc=$?
    fi
    [ "$rc" -ne 0 ] || out=$(cd "$work" && "${!cli}" validate -no-color 2>&1) || rc=$?
    warnings=$(grep '^Warning: ' <<<"$out" | grep -vc '^Warning: Provider development overrides are in effect$' || true)
    if [ "$rc" -eq 0 ] && [ "$warnings" -eq 0 ]; then
      printf 'ok    %-9s %s\n' "$cli" "$dir"
    else
      failed=$((failed + 1))
      printf 'FAIL  %-9s %s\n' "$cli" "$dir"
      sed 's/^/      /' <<<"$out"
    fi
  done
done 3<<<"$dirs"
if [ "$failed" -gt 0 ]; then
  echo "examples: $failed of $n checks failed" >&2
  exit 1
fi
echo "examples: all $n checks passed ($ndirs examples, each under Terraform 1.5.7, the newest Terraform and OpenTofu; those of examples/functions under the newest Terraform and OpenTofu only)"
