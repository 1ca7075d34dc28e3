#!/usr/bin/env bash
# Runs every test of the module with the race detector.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

go test -race -count=1 -timeout 20m ./...
