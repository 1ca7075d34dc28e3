#!/usr/bin/env bash
# Runs the tests with the race detector.
#   hack/test.sh        all of them (unit and e2e)
#   hack/test.sh unit   only those that need no control plane
#   hack/test.sh e2e    only those against a real kube-apiserver (bin/, see
#                       hack/build-control-plane.sh)
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${root}/_output/tmp"

scope=${1:-all}
case "${scope}" in
  unit) pkgs=$(go list ./... | grep -v '/test/') ;;
  e2e) pkgs=$(go list ./test/...) ;;
  all) pkgs=$(go list ./...) ;;
  *) echo "usage: $0 [unit|e2e|all]" >&2; exit 2 ;;
esac

# shellcheck disable=SC2086
go test -race -count=1 -timeout 20m ${pkgs}
