#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Scheduling throughput benchmark (test/benchmark): the real batch-scheduler
# against a real kube-apiserver and etcd, next to the API server's raw
# binding ceiling measured in the same run. The ceiling is the best of
# 16, 64 and 128 concurrent binders (BENCH_BINDERS), so it is the API
# server's limit, not one client's. Prints pods/s of both, the ratio (goal:
# at least 0.70), the p99 scheduling-attempt latency and a summary table;
# the output is also kept in _output/bench-scheduling.txt.
#
# With two-level it runs BenchmarkSchedulingTwoLevel instead: the scheduler
# under the two-level event handler (every node granted in full by an
# in-process resourcemanager store) against the default handler in the same
# run (default, two-level, default), reporting the ratio two-level/default
# (goal: at least 0.90); output in _output/bench-scheduling-two-level.txt.
#
# With hybrid it runs BenchmarkSchedulingHybrid: a hybrid cluster (half
# the nodes shared with examples/vm-manager, VMs placed while the pods
# are), with the NodeLedger plugin and the VM manager's --ledger against
# today's informer alone, in the same run (today-1, ledger, today-2,
# ledger-unshared, today-3), reporting the ratio ledger/today and the
# Bind p99 of each phase; output in _output/bench-scheduling-hybrid.txt.
#
# With gang it runs BenchmarkGang: gangs of 8 placed by batch-scheduler,
# by kube-scheduler v1.37.1 (bin/kube-scheduler, GenericWorkload on, native
# PodGroups) and the raw binding ceiling, in one run; output in
# _output/bench-gang.txt.
#
# With scale it runs BenchmarkSchedulingAtScale: 5,000 nodes with 150,000
# pods already bound, then 10,000 pending pods, against the ceiling in the
# same cluster; output in _output/bench-scheduling-scale.txt.
#
# Usage: hack/bench-scheduling.sh [quick] [two-level|hybrid|gang|scale]
#   (none)     500 nodes, 10000 pods per phase (a few minutes on 2 cores)
#   quick      100 nodes, 2000 pods per phase (a smoke run, about a minute)
#   two-level  BenchmarkSchedulingTwoLevel (about 2 minutes per run at the
#              default size)
#   hybrid     BenchmarkSchedulingHybrid (about 9 minutes per run at the
#              default size, 2 of them creating the pods)
#   gang       BenchmarkGang (kube-scheduler's phase alone takes minutes at
#              the default size)
#   scale      BenchmarkSchedulingAtScale (about 15 minutes on 2 cores, most
#              of it creating the 150,000 bound pods; quick: 500 nodes,
#              15,000 bound, 2,000 pending)
# Env (override the size and limits; see BenchmarkScheduling):
#   BENCH_NODES, BENCH_PODS, BENCH_QPS (5000), BENCH_BURST (= BENCH_QPS),
#   BENCH_BINDERS (16,64,128: the ceiling's concurrencies),
#   BENCH_BIND_CONCURRENCY (the scheduler's --bind-concurrency; default: its
#                          own default),
#   BENCH_SCALE_NODES (5000), BENCH_SCALE_BOUND (150000),
#   BENCH_SCALE_PODS (10000), BENCH_SCALE_CLIENTS (8),
#   BENCH_SCALE_WORKERS (32)   scale: the sizes and the bulk creation,
#   BENCH_TIMEOUT_SECONDS (900), BENCH_V (scheduler -v, 0),
#   BENCH_CPUPROFILE=FILE  CPU profile of the scheduler phase
#                          (inspect: go tool pprof -top FILE); with
#                          two-level, a prefix: FILE-default-1.pprof,
#                          FILE-two-level.pprof, FILE-default-2.pprof;
#                          with hybrid, FILE-PHASE.pprof per phase
#   BENCH_VMS_PER_MINUTE   hybrid: VMs the VM manager is asked to place per
#                          minute during each phase (30)
#   BENCH_COUNT            runs (go test -count; default 1)
#   BENCH_GANG_DIALECT     gang: batch-scheduler's gangs as native PodGroups
#                          (native) or annotations (annotation, the default)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

BENCH='^BenchmarkScheduling$'
OUT=_output/bench-scheduling.txt
for arg in "$@"; do
  case "${arg}" in
    quick)
      export BENCH_NODES="${BENCH_NODES:-100}"
      export BENCH_PODS="${BENCH_PODS:-2000}"
      export BENCH_SCALE_NODES="${BENCH_SCALE_NODES:-500}"
      export BENCH_SCALE_BOUND="${BENCH_SCALE_BOUND:-15000}"
      export BENCH_SCALE_PODS="${BENCH_SCALE_PODS:-2000}"
      ;;
    two-level)
      BENCH='^BenchmarkSchedulingTwoLevel$'
      OUT=_output/bench-scheduling-two-level.txt
      ;;
    hybrid)
      BENCH='^BenchmarkSchedulingHybrid$'
      OUT=_output/bench-scheduling-hybrid.txt
      ;;
    gang)
      BENCH='^BenchmarkGang$'
      OUT=_output/bench-gang.txt
      ;;
    scale)
      BENCH='^BenchmarkSchedulingAtScale$'
      OUT=_output/bench-scheduling-scale.txt
      ;;
    *) echo "usage: $0 [quick] [two-level|hybrid|gang|scale]" >&2; exit 2 ;;
  esac
done

hack/build-control-plane.sh

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"

if [[ "${BENCH}" == '^BenchmarkSchedulingAtScale$' ]]; then
  echo "[bench-scheduling] ${BENCH} BENCH_SCALE_NODES=${BENCH_SCALE_NODES:-5000} BENCH_SCALE_BOUND=${BENCH_SCALE_BOUND:-150000} BENCH_SCALE_PODS=${BENCH_SCALE_PODS:-10000} BENCH_COUNT=${BENCH_COUNT:-1}"
else
  echo "[bench-scheduling] ${BENCH} BENCH_NODES=${BENCH_NODES:-500} BENCH_PODS=${BENCH_PODS:-10000} BENCH_COUNT=${BENCH_COUNT:-1}"
fi
"${GO}" test -run '^$' -bench "${BENCH}" -benchtime 1x -count "${BENCH_COUNT:-1}" -timeout 60m ./test/benchmark 2>&1 |
  tee "${OUT}"
