#!/usr/bin/env bash
# Prints statement coverage of the framework packages.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mkdir -p _output
go test -count=1 -coverprofile=_output/cover-eventhandlers.out -coverpkg=./pkg/eventhandlers/... ./pkg/eventhandlers/... >/dev/null
go test -count=1 -coverprofile=_output/cover-cache.out ./pkg/cache/... >/dev/null
echo "pkg/eventhandlers/...: $(go tool cover -func=_output/cover-eventhandlers.out | awk '/^total:/ {print $3}')"
echo "pkg/cache:             $(go tool cover -func=_output/cover-cache.out | awk '/^total:/ {print $3}')"
