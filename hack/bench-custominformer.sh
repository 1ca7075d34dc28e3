#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Custom informer throughput benchmark (test/benchmark,
# BenchmarkCustomInformerThroughput): ExternalWorkload events/s from a
# resourcemanager.Store on a loopback HTTP server through the http custom
# informer into the scheduler cache (default handler), next to a native
# SharedIndexInformer fed the same events from memory, in the same run.
# Prints the go test output, then events/s of both sides per run and the
# ratio http/native; everything is also kept in
# _output/bench-custominformer.txt. No control plane is needed.
#
# Usage: hack/bench-custominformer.sh [quick]
#   (none)  20000 events per side, 3 runs (about 15 seconds on 2 cores)
#   quick   2000 events per side, 1 run (a smoke run, a few seconds)
# Env:
#   BENCH_CI_EVENTS     events per side and run (b.N; default 20000)
#   BENCH_CI_COUNT      runs (-count; default 3)
#   BENCH_CI_NODES      nodes (300)
#   BENCH_CI_WORKLOADS  workloads in the initial list (1500)

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

case "${1:-}" in
  "") ;;
  quick)
    BENCH_CI_EVENTS="${BENCH_CI_EVENTS:-2000}"
    BENCH_CI_COUNT="${BENCH_CI_COUNT:-1}"
    ;;
  *) echo "usage: $0 [quick]" >&2; exit 2 ;;
esac
EVENTS="${BENCH_CI_EVENTS:-20000}"
COUNT="${BENCH_CI_COUNT:-3}"

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"
OUT=_output/bench-custominformer.txt

echo "[bench-custominformer] events=${EVENTS} count=${COUNT} BENCH_CI_NODES=${BENCH_CI_NODES:-300} BENCH_CI_WORKLOADS=${BENCH_CI_WORKLOADS:-1500}" | tee "${OUT}"
# One process per run rather than -count: go test -count N runs the native
# side N times and then the http side N times, while a run here is native
# then http, back to back, so that the two sides of one ratio see the same
# load on a shared machine.
BIN=_output/bench-custominformer.test
"${GO}" test -c -o "${BIN}" ./test/benchmark
for _ in $(seq "${COUNT}"); do
  "${BIN}" -test.run '^$' -test.bench '^BenchmarkCustomInformerThroughput$' -test.benchtime "${EVENTS}x" \
    -test.count 1 -test.timeout 10m 2>&1 | tee -a "${OUT}"
done

# Pair the native and http lines of each run and summarise.
awk '
  function metric(unit,   i) { for (i = 3; i <= NF; i++) if ($i == unit) return $(i - 1); return "" }
  $1 ~ /^BenchmarkCustomInformerThroughput\/native(-[0-9]+)?$/ { nat = metric("events/s"); natAllocs = metric("allocs/op") }
  $1 ~ /^BenchmarkCustomInformerThroughput\/http(-[0-9]+)?$/ && nat != "" {
    n++; h = metric("events/s")
    r[n] = h / nat; sn += nat; sh += h
    printf "run %d: native %8.0f events/s (%s allocs/event)   http %7.0f events/s (%s allocs/event)   ratio %.3f\n",
      n, nat, natAllocs, h, metric("allocs/op"), r[n]
    nat = ""
  }
  END {
    if (n == 0) { print "no complete native/http pair in the output" > "/dev/stderr"; exit 1 }
    min = max = r[1]; for (i = 2; i <= n; i++) { if (r[i] < min) min = r[i]; if (r[i] > max) max = r[i] }
    printf "mean:  native %8.0f events/s   http %7.0f events/s   ratio http/native %.3f (per run %.3f to %.3f)\n",
      sn / n, sh / n, (sh / n) / (sn / n), min, max
  }
' "${OUT}" | tee -a "${OUT}"
