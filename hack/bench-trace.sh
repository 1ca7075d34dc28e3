#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Workloads that run to completion (test/benchmark, BenchmarkTrace): one
# seeded trace of mixed batch Jobs (gangs of 1 to 256 pods, run times of
# seconds to minutes, three priorities, arriving over a window; size
# classes after the Microsoft Philly trace, see docs/performance.md)
# replayed as batch/v1 Jobs on a cluster of simulated kubelets (KWOK),
# once per scheduler on the same control plane:
#   batch-scheduler          its gangs native PodGroups (BENCH_TRACE_DIALECT)
#   kube-scheduler-gang      kube-scheduler v1.37.1, GenericWorkload on,
#                            native PodGroups (scheduling.k8s.io/v1beta1)
#   kube-scheduler-plain     kube-scheduler v1.37.1, no gangs
# Reported per scheduler: makespan, time-averaged allocation, wait
# (creation to all pods bound) p50/p99 by size class, Jobs that ran below
# quorum (batch-scheduler must have none). The output is also kept in
# _output/bench-trace.txt.
#
# Usage: hack/bench-trace.sh [quick|5000]
#   (none)  1,000 nodes of 8 pods, arrivals over 120 s
#   quick   100 nodes, arrivals over 60 s (35 minutes on 2 shared cores at
#           load 16-32: each replay waits for the Job controller's backoff)
#   5000    5,000 nodes, arrivals over 120 s (on 2 cores the control plane
#           cannot create that many pods in time; docs/performance.md ran
#           BENCH_TRACE_SECONDS=30 BENCH_TRACE_WAIT_SECONDS=480: 35 minutes)
# Env (see BenchmarkTrace): BENCH_TRACE_NODES, BENCH_TRACE_SECONDS,
#   BENCH_TRACE_LOAD_PERCENT (90: offered work ÷ capacity over the window),
#   BENCH_TRACE_SCALE (100: run times divided by it), BENCH_TRACE_SEED (1),
#   BENCH_TRACE_SETTLE_SECONDS (10: how long a Job may have some but fewer
#   than its size of pods bound), BENCH_TRACE_SCHEDULERS (all three),
#   BENCH_TRACE_DIALECT (native, or job), BENCH_TRACE_WAIT_SECONDS (900),
#   BENCH_TRACE_LOGS=DIR (keep the schedulers' logs), BENCH_BATCH_SCHEDULER,
#   BENCH_QPS (5000), BENCH_BURST, BENCH_V, BENCH_COUNT (1)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

for arg in "$@"; do
  case "${arg}" in
    quick)
      export BENCH_TRACE_NODES="${BENCH_TRACE_NODES:-100}"
      export BENCH_TRACE_SECONDS="${BENCH_TRACE_SECONDS:-60}"
      ;;
    5000) export BENCH_TRACE_NODES="${BENCH_TRACE_NODES:-5000}" ;;
    *) echo "usage: $0 [quick|5000]" >&2; exit 2 ;;
  esac
done

hack/build-control-plane.sh kube-apiserver etcd kube-controller-manager kube-scheduler kwok

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"

echo "[bench-trace] BENCH_TRACE_NODES=${BENCH_TRACE_NODES:-1000} BENCH_TRACE_SECONDS=${BENCH_TRACE_SECONDS:-120} BENCH_COUNT=${BENCH_COUNT:-1}; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
"${GO}" test -run '^$' -bench '^BenchmarkTrace$' -benchtime 1x -count "${BENCH_COUNT:-1}" -timeout 180m ./test/benchmark 2>&1 |
  tee _output/bench-trace.txt
