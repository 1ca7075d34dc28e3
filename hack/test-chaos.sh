#!/usr/bin/env bash
# Runs the chaos suite (test/chaos) in full: each fault for longer and in
# several rounds (CHAOS_FULL=1), with the race detector when available;
# then test/twolevel's churn (TWOLEVEL_CHURN=full). The short chaos suite
# runs with the other e2e tests in hack/test.sh; the churn does not.
#   hack/test-chaos.sh [go test flags, e.g. -run TestLeaderFailover]
# The summary table goes to stdout and to _output/chaos-report.md.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${root}/_output/tmp"

race=(-race)
if reason=$(race_unavailable) && [[ -n "${reason}" ]]; then
  echo "hack/test-chaos.sh: race detector off: ${reason}" >&2
  race=()
fi

CHAOS_FULL=1 CHAOS_REPORT="${root}/_output/chaos-report.md" \
  go test ${race[@]+"${race[@]}"} -count=1 -timeout 60m -v "$@" ./test/chaos/
# The two-level churn: two batch-schedulers and the VM manager under the
# allocator, with random pods, gangs, VMs, weights and revocations for 2
# minutes (skipped by make test).
TWOLEVEL_CHURN=full go test ${race[@]+"${race[@]}"} -count=1 -timeout 20m -v -run '^TestTwoFrameworksChurn$' ./test/twolevel/
