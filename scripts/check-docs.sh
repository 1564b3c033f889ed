#!/usr/bin/env bash
# Regenerates docs/ with tfplugindocs from the provider's schema, templates/
# and examples/, and the inputs/outputs section of each modules/*/README.md
# with terraform-docs (between its markers, per the module's
# .terraform-docs.yml), and with --check fails when the checked-in docs/ or
# module READMEs differ.
# The schema comes from `terraform providers schema -json` run against a
# freshly built provider through dev_overrides: no registry, no download.
# The newest Terraform gives it: 1.5.7's schema has no provider functions
# (they came with 1.8), so docs/functions/ would be missing.
set -euo pipefail
cd "$(dirname "$0")/.."
tfplugindocs=$(bash tools/install.sh tfplugindocs)
terraform_docs=$(bash tools/install.sh terraform-docs)
terraform=$(bash tools/install.sh terraform-latest)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The provider, built where the next run finds it: go build leaves an
# up-to-date binary as it is instead of linking it again.
bin=$PWD/build/docs-check
go build -o "$bin/terraform-provider-kmshealth" .
cat >"$tmp/cli.tfrc" <<RC
provider_installation {
  dev_overrides { "registry.terraform.io/kmshealth/kmshealth" = "$bin" }
  direct {}
}
RC
mkdir "$tmp/root"
cat >"$tmp/root/main.tf" <<'TF'
terraform {
  required_providers {
    kmshealth = { source = "kmshealth/kmshealth" }
  }
}
TF
(cd "$tmp/root" && TF_CLI_CONFIG_FILE="$tmp/cli.tfrc" CHECKPOINT_DISABLE=1 "$terraform" providers schema -json -no-color >"$tmp/schema.json" 2>"$tmp/schema.err") ||
  { cat "$tmp/schema.err" >&2; exit 1; }
# tfplugindocs looks the schema up by short name. (No sed -i: GNU and BSD
# sed disagree on it.)
sed 's#"registry.terraform.io/kmshealth/kmshealth"#"kmshealth"#' "$tmp/schema.json" >"$tmp/schema.short.json"
"$tfplugindocs" generate --provider-name kmshealth --providers-schema "$tmp/schema.short.json" >"$tmp/gen.log" 2>&1 ||
  { cat "$tmp/gen.log" >&2; exit 1; }
# The generated paths: docs/ and each module README. (bash 3.2, macOS's,
# treats "${a[@]}" of an empty array as unset under set -u: docs/ is always
# the first element.)
paths=(docs/)
for conf in modules/*/.terraform-docs.yml; do
  [ -e "$conf" ] || continue
  "$terraform_docs" -c "$conf" "$(dirname "$conf")" >"$tmp/terraform-docs.log" 2>&1 ||
    { cat "$tmp/terraform-docs.log" >&2; exit 1; }
  paths+=("$(dirname "$conf")/README.md")
done
if [ "${1:-}" = --check ]; then
  if [ -n "$(git status --porcelain -- "${paths[@]}")" ]; then
    git status --porcelain -- "${paths[@]}"
    git --no-pager diff -- "${paths[@]}" | head -50
    echo "docs/ or a module README is stale: run 'make docs' and commit the result" >&2
    exit 1
  fi
  echo "${paths[*]} are up to date"
fi
