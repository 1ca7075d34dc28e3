#!/usr/bin/env bash
# Runs the chaos suite (test/chaos) in full: each fault for longer and in
# several rounds (CHAOS_FULL=1), with the race detector when available;
# then test/twolevel's two churn tests for 2 minutes each
# (TWOLEVEL_CHURN=full), once per seed of CHURN_SEEDS (three random seeds
# unless set). hack/test.sh runs the short chaos suite and 30-second
# churns with the other e2e tests.
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
# The churns: two placers on the same hosts (two batch-schedulers and the
# VM manager under the allocator; batch-scheduler and the VM manager
# sharing hosts through their ledgers) with random pods, gangs, VMs,
# weights, revocations and resizes, and each component killed once, for 2
# minutes per seed. A failing seed is printed; TWOLEVEL_CHURN_SEED=<seed>
# replays it.
seeds=${CHURN_SEEDS:-"${RANDOM}${RANDOM} ${RANDOM}${RANDOM} ${RANDOM}${RANDOM}"}
for seed in ${seeds}; do
  echo "hack/test-chaos.sh: churn with seed ${seed}" >&2
  TWOLEVEL_CHURN=full TWOLEVEL_CHURN_SEED="${seed}" go test ${race[@]+"${race[@]}"} -count=1 -timeout 30m -v \
    -run '^(TestTwoFrameworksChurn|TestHybridChurn)$' ./test/twolevel/
done
