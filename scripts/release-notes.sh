#!/usr/bin/env bash
# Prints the section of CHANGELOG.md for one version (the lines after its
# "## [<version>]" heading, up to the next "## " heading), for the release's
# notes: scripts/release-notes.sh 0.1.0 > notes.md. Fails, naming the fix,
# when the section is missing or empty, so a release cannot go out with
# notes nobody wrote. Portable (bash 3.2, BSD awk).
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:?usage: $0 <version without the v, e.g. 0.1.0>}
notes=$(awk -v v="$version" '
  index($0, "## [" v "]") == 1 { found = 1; next }
  found && /^## / { exit }
  found { print }
' CHANGELOG.md)
if [ -z "$(printf '%s' "$notes" | tr -d '[:space:]')" ]; then
  echo "release-notes: CHANGELOG.md has no entries under '## [$version]': rename '## [Unreleased]' to '## [$version] - <date>' in the tagged commit" >&2
  exit 1
fi
printf '%s\n' "$notes"
