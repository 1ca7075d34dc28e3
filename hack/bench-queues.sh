#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Tenant queues benchmark (test/benchmark, BenchmarkQueues): the real
# batch-scheduler against a real kube-apiserver and etcd with simulated
# kubelets (KWOK), in phases on one control plane (they run in the order
# reclaim, throughput, fairness, backlog; each phase's queues, pods and
# namespace are deleted before the next):
#   fairness    4 queues of weights 1, 1, 2, 4 each keep a backlog of gangs
#               (1-8 pods of 1 CPU, 5-15 s); the time-averaged share of
#               the cluster's CPU each runs vs its fair share from
#               pkg/fairshare (goal: worst |measured/fair - 1| <= 0.05) and
#               the utilization (goal: >= 0.95); first the same workload
#               with the scheduler's queues disabled, the control
#   reclaim     a borrower fills the cluster; a queue guaranteed a quarter
#               of it submits gangs of 8, 5 times: creation to all 8
#               Running (goal: p50 < 5 s at 500 nodes); a gang left below
#               its quorum (in this phase or in fairness) fails the run
#   throughput  10000 pending single pods without queues, over 10 queues,
#               without queues again (goal: ratio >= 0.90)
#   backlog     opt-in (BENCH_QUEUE_PHASES=...,backlog; about 10 more
#               minutes at 100 nodes): queues big (weight 3, gangs of
#               4-32), small-a (2, single pods and gangs of 1-4), small-b
#               (1, single pods), 1 CPU pods of 5-60 s, all backlogged;
#               run twice, reservations on (the default profile) and
#               off (Reservation left out of the PostFilter plugins): shares
#               ÷ fair share, evictions per 100 completed pods, bound
#               utilization, waits of gangs >= 16 vs single pods,
#               scheduler CPU per pod, error of /debug/standing's start
#               estimates
# The output is also kept in _output/bench-queues.txt.
#
# Usage: hack/bench-queues.sh [quick]
#   (none)  500 nodes of 4 CPUs, 2 minutes of fairness, 10000 pods per
#           throughput phase (about 16 minutes on 2 shared cores, the fairness
#           control included)
#   quick   50 nodes, 60 s of fairness (20 s left out), 1500 pods per
#           throughput phase (a smoke run, about 4 minutes)
# Env (see BenchmarkQueues):
#   BENCH_QUEUE_NODES (500), BENCH_QUEUE_PODS (10000),
#   BENCH_QUEUE_FAIR_SECONDS (120), BENCH_QUEUE_SKIP_SECONDS (30),
#   BENCH_QUEUE_BACKLOG_CPU (a tenth of the cluster, at least 24),
#   BENCH_QUEUE_RECLAIM_REPS (5), BENCH_QUEUE_SEED (1),
#   BENCH_QUEUE_SETTLE_SECONDS (10: how long a gang may have some but
#                               fewer than its quorum of pods bound),
#   BENCH_QUEUE_PHASES (fairness,reclaim,throughput; backlog is opt-in),
#   BENCH_QUEUE_BACKLOG_SECONDS (240 per variant),
#   BENCH_QUEUE_BACKLOG_SKIP_SECONDS (60), BENCH_QUEUE_BACKLOG_VARIANTS
#   (off,on),
#   BENCH_QUEUE_FAIR_CONTROL (1; 0 skips the fairness phase's control),
#   BENCH_QUEUE_LOGS=DIR (keep the logs and CPU profiles of the fairness,
#                         reclaim and backlog phases' schedulers, which run as
#                         child processes: DIR/batch-scheduler-PHASE.log,
#                         DIR/batch-scheduler-PHASE/cpu.pprof),
#   BENCH_BATCH_SCHEDULER=PATH (a binary for those phases instead of the
#                               test binary re-executed),
#   BENCH_QPS (5000), BENCH_BURST (= BENCH_QPS), BENCH_TIMEOUT_SECONDS (900),
#   BENCH_V (scheduler -v, 0), BENCH_CPUPROFILE=PREFIX (CPU profiles of the
#   throughput phases: PREFIX-<phase>.pprof), BENCH_COUNT (runs, 1)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

for arg in "$@"; do
  case "${arg}" in
    quick)
      export BENCH_QUEUE_NODES="${BENCH_QUEUE_NODES:-50}"
      export BENCH_QUEUE_PODS="${BENCH_QUEUE_PODS:-1500}"
      export BENCH_QUEUE_FAIR_SECONDS="${BENCH_QUEUE_FAIR_SECONDS:-60}"
      export BENCH_QUEUE_SKIP_SECONDS="${BENCH_QUEUE_SKIP_SECONDS:-20}"
      ;;
    *) echo "usage: $0 [quick]" >&2; exit 2 ;;
  esac
done

hack/build-control-plane.sh kube-apiserver etcd kube-controller-manager kwok

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"

echo "[bench-queues] BENCH_QUEUE_NODES=${BENCH_QUEUE_NODES:-500} BENCH_QUEUE_PODS=${BENCH_QUEUE_PODS:-10000} BENCH_QUEUE_FAIR_SECONDS=${BENCH_QUEUE_FAIR_SECONDS:-120} BENCH_COUNT=${BENCH_COUNT:-1}"
"${GO}" test -run '^$' -bench '^BenchmarkQueues$' -benchtime 1x -count "${BENCH_COUNT:-1}" -timeout 45m ./test/benchmark 2>&1 |
  tee _output/bench-queues.txt
