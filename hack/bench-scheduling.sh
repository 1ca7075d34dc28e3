#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Scheduling throughput benchmark (test/benchmark): the real batch-scheduler
# against a real kube-apiserver and etcd, next to the API server's raw
# binding ceiling measured in the same run. Prints pods/s of both, the ratio
# (goal: at least 0.70) and a summary table; the output is also kept in
# _output/bench-scheduling.txt.
#
# Usage: hack/bench-scheduling.sh [quick]
#   (none)  500 nodes, 10000 pods per phase (a few minutes on 2 cores)
#   quick   100 nodes, 2000 pods per phase (a smoke run, about a minute)
# Env (override the size and limits; see BenchmarkScheduling):
#   BENCH_NODES, BENCH_PODS, BENCH_QPS (5000), BENCH_BURST (= BENCH_QPS),
#   BENCH_TIMEOUT_SECONDS (900), BENCH_V (scheduler -v, 0),
#   BENCH_CPUPROFILE=FILE  CPU profile of the scheduler phase
#                          (inspect: go tool pprof -top FILE)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

case "${1:-}" in
  "") ;;
  quick)
    export BENCH_NODES="${BENCH_NODES:-100}"
    export BENCH_PODS="${BENCH_PODS:-2000}"
    ;;
  *) echo "usage: $0 [quick]" >&2; exit 2 ;;
esac

hack/build-control-plane.sh

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"

echo "[bench-scheduling] BENCH_NODES=${BENCH_NODES:-500} BENCH_PODS=${BENCH_PODS:-10000}"
"${GO}" test -run '^$' -bench '^BenchmarkScheduling$' -benchtime 1x -timeout 60m ./test/benchmark 2>&1 |
  tee _output/bench-scheduling.txt
