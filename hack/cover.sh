#!/usr/bin/env bash
# Prints statement coverage of the main packages (unit tests only).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mkdir -p _output
for pkg in eventhandlers cache framework plugins scheduler; do
  go test -count=1 -coverprofile="_output/cover-${pkg}.out" -coverpkg="./pkg/${pkg}/..." "./pkg/${pkg}/..." >/dev/null
  printf '%-22s %s\n' "pkg/${pkg}/...:" "$(go tool cover -func="_output/cover-${pkg}.out" | awk '/^total:/ {print $3}')"
done
