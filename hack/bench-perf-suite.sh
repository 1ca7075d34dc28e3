#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# kube-scheduler's own benchmark suite (test/integration/scheduler_perf of
# k8s.io/kubernetes v1.37.1, read from the Go module cache) run with
# kube-scheduler v1.37.1 and with batch-scheduler, each workload on a fresh
# etcd and kube-apiserver (test/perfsuite, BenchmarkPerfSuite). The table
# (pods/s of each, the ratio, upstream's threshold, attempt latency
# percentiles, scheduler CPU per pod) is written to _output/perf-suite.md
# as rows finish; the log goes to _output/bench-perf-suite.txt.
#
# Usage: hack/bench-perf-suite.sh [full]
#   (none)  the short set: each test case's largest workload of at most
#           PERF_SUITE_MAX_NODES (500) nodes (about an hour on 2 shared cores)
#   full    the workloads upstream labels "performance": its CI's 5,000-node
#           sizes (31 of them took 85 minutes on 2 cores, the 15,000-20,000-node
#           ones were not run; narrow it with PERF_SUITE_RUN)
# Env: PERF_SUITE_RUN (a regexp of TestCase/workload),
#      PERF_SUITE_MAX_NODES (500), PERF_SUITE_TIMEOUT_SECONDS (600: each
#      wait for pods to be scheduled), PERF_SUITE_PROFILE_DIR (CPU profiles
#      of both schedulers over the first PERF_SUITE_PROFILE_SECONDS, 10, of
#      each measured window: go tool pprof -top FILE; and each scheduler's
#      log), PERF_SUITE_VERBOSITY (the schedulers' -v, 1; 2 logs every
#      preemption and victim of ours and of kube-scheduler),
#      PERF_SUITE_ONLY (kube-scheduler or batch-scheduler: run only that
#      one),
#      PERF_SUITE_MIN_PODS (0: a workload that measures fewer pods runs
#      again, each time on a fresh control plane, up to 20 times, until its
#      runs add up to that many pods; its row sums them),
#      PERF_SUITE_BATCH_CONFIG (a batch-scheduler --config-path file for the
#      workloads that bring no scheduler configuration of their own).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

export PERF_SUITE_SET=short
if [[ "${1:-}" == full ]]; then
  PERF_SUITE_SET=full
fi
hack/build-control-plane.sh
mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"
export PERF_SUITE_OUT="${ROOT}/_output/perf-suite.md"
echo "perf suite: set ${PERF_SUITE_SET}, table in ${PERF_SUITE_OUT}" >&2
"${GO}" test -run '^$' -bench '^BenchmarkPerfSuite$' -benchtime 1x -timeout 720m ./test/perfsuite 2>&1 | tee _output/bench-perf-suite.txt
