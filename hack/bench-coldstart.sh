#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Cold start benchmark (test/benchmark, BenchmarkColdStart): a real
# kube-apiserver and etcd seeded with BENCH_NODES nodes and BENCH_PODS
# pods already bound, then batch-scheduler (built from this tree), the
# kube-scheduler of bin/ (v1.37.1, default profile) and batch-scheduler
# again, each started cold as a process on one pending pod of its own,
# once the control plane is at rest (kube-apiserver and etcd under 15 % of
# a core for two seconds in a row, 90 s at most: the seeding leaves them
# busy for a while, which slowed whichever scheduler ran first).
# Prints, per scheduler, the time from process start to that pod bound and
# the peak RSS (VmHWM), and the ratios (goals of issue 38: time at most 0.4 of
# kube-scheduler's, peak RSS at most 400 MiB). The output is also kept in
# _output/bench-coldstart.txt, with the machine's load before and after.
#
# Usage: hack/bench-coldstart.sh [quick]
#   (none)  5000 nodes, 150000 pods: seeding takes minutes on 2 cores
#   quick   200 nodes, 3000 pods (TestColdStart's size; CI runs that test
#           in hack/test-benchmarks.sh, make test skips it)
# Env:
#   BENCH_NODES, BENCH_PODS     the size
#   BENCH_NAMESPACES (50)       namespaces of the bound pods
#   BENCH_SEED_CLIENTS (8), BENCH_SEED_WORKERS (96)
#                               clients (own connections) and goroutines
#                               that seed the cluster
#   BENCH_POD_STATUS (1)        0: no running status on the bound pods
#                               (half the seeding requests)
#   BENCH_LEADER_ELECT (1)      0: both schedulers without leader election
#   BENCH_TIMEOUT_SECONDS (600) bound on each scheduler's wait
#   BENCH_COUNT (1)             runs (go test -count), each on a fresh
#                               control plane
#   BENCH_COLDSTART_PROFILE=DIR the second batch-scheduler run is profiled:
#                               DIR/batch-scheduler-2/{cpu,heap}.pprof
#                               (inspect: go tool pprof -top FILE)
#   BENCH_BATCH_SCHEDULER=PATH  a batch-scheduler binary to use instead of
#                               building one
#   BENCH_BATCH_SCHEDULER_BEFORE=PATH
#                               another batch-scheduler binary (e.g. built
#                               from main) measured in the same run as
#                               "before": batch, before, kube, batch, before
#   BENCH_COLDSTART_LOGS=DIR    keep the schedulers' logs there
#   BENCH_V (0)                 -v of both schedulers

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

for arg in "$@"; do
  case "${arg}" in
    quick)
      export BENCH_NODES="${BENCH_NODES:-200}"
      export BENCH_PODS="${BENCH_PODS:-3000}"
      ;;
    *) echo "usage: $0 [quick]" >&2; exit 2 ;;
  esac
done

hack/build-control-plane.sh

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"
OUT=_output/bench-coldstart.txt

{
  echo "[bench-coldstart] $(date -u +%Y-%m-%dT%H:%M:%SZ) commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD -- 2>/dev/null || echo -dirty)" \
    "BENCH_NODES=${BENCH_NODES:-5000} BENCH_PODS=${BENCH_PODS:-150000} BENCH_COUNT=${BENCH_COUNT:-1}"
  echo "[bench-coldstart] $(nproc) CPUs, $(free -g | awk '/^Mem:/ {print $2 " GiB"}') memory; load before: $(uptime)"
  "${GO}" test -run '^$' -bench '^BenchmarkColdStart$' -benchtime 1x -count "${BENCH_COUNT:-1}" -timeout 120m ./test/benchmark 2>&1
  echo "[bench-coldstart] load after: $(uptime)"
} | tee "${OUT}"
