#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Custom informer throughput benchmarks (test/benchmark):
# BenchmarkCustomInformerThroughput streams ExternalWorkload events into the
# default handler, BenchmarkGrantInformerThroughput streams Grant events into
# the two-level handler (each event changes a node cap). Each measures
# events/s from a resourcemanager.Store on a loopback HTTP server through
# the http custom informer into the scheduler cache, next to a native
# SharedIndexInformer fed the same events from memory, in the same run.
# Prints the go test output, then events/s of both sides per run and the
# ratio http/native; everything is also kept in
# _output/bench-custominformer.txt. No control plane is needed.
#
# Usage: hack/bench-custominformer.sh [quick]
#   (none)  20000 events per side, 3 runs (about 15 seconds per kind on 2 cores)
#   quick   2000 events per side, 1 run (a smoke run, a few seconds)
# Env:
#   BENCH_CI_KIND       workloads, grants or all (default workloads)
#   BENCH_CI_EVENTS     events per side and run (b.N; default 20000)
#   BENCH_CI_COUNT      runs (-count; default 3)
#   BENCH_CI_NODES      nodes (300)
#   BENCH_CI_WORKLOADS  ExternalWorkloads in the initial list (1500)
#   BENCH_CI_GRANTS     Grants in the initial list (600)

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
KIND="${BENCH_CI_KIND:-workloads}"
case "${KIND}" in
  workloads) BENCH='^BenchmarkCustomInformerThroughput$' ;;
  grants) BENCH='^BenchmarkGrantInformerThroughput$' ;;
  all) BENCH='^Benchmark(CustomInformer|GrantInformer)Throughput$' ;;
  *) echo "BENCH_CI_KIND=${KIND}: want workloads, grants or all" >&2; exit 2 ;;
esac

mkdir -p _output/tmp
export TMPDIR="${ROOT}/_output/tmp"
OUT=_output/bench-custominformer.txt

echo "[bench-custominformer] kind=${KIND} events=${EVENTS} count=${COUNT} BENCH_CI_NODES=${BENCH_CI_NODES:-300} BENCH_CI_WORKLOADS=${BENCH_CI_WORKLOADS:-1500} BENCH_CI_GRANTS=${BENCH_CI_GRANTS:-600}" | tee "${OUT}"
# One process per run rather than -count: go test -count N runs the native
# side N times and then the http side N times, while a run here is native
# then http, back to back, so that the two sides of one ratio see the same
# load on a shared machine.
BIN=_output/bench-custominformer.test
"${GO}" test -c -o "${BIN}" ./test/benchmark
for _ in $(seq "${COUNT}"); do
  "${BIN}" -test.run '^$' -test.bench "${BENCH}" -test.benchtime "${EVENTS}x" \
    -test.count 1 -test.timeout 10m 2>&1 | tee -a "${OUT}"
done

# Pair the native and http lines of each run, per benchmark, and summarise.
awk '
  function metric(unit,   i) { for (i = 3; i <= NF; i++) if ($i == unit) return $(i - 1); return "" }
  # The benchmark ("workloads" or "grants") and side of a result line.
  function what(   name) {
    name = $1; sub(/-[0-9]+$/, "", name)
    if (name ~ /^BenchmarkCustomInformerThroughput\//) k = "workloads"; else if (name ~ /^BenchmarkGrantInformerThroughput\//) k = "grants"; else return ""
    sub(/^.*\//, "", name)
    return name
  }
  { side = what() }
  side == "native" { nat[k] = metric("events/s"); natAllocs[k] = metric("allocs/op") }
  side == "http" && nat[k] != "" {
    n[k]++; h = metric("events/s"); r = h / nat[k]
    rs[k, n[k]] = r; sn[k] += nat[k]; sh[k] += h
    printf "%-9s run %d: native %8.0f events/s (%s allocs/event)   http %7.0f events/s (%s allocs/event)   ratio %.3f\n",
      k, n[k], nat[k], natAllocs[k], h, metric("allocs/op"), r
    nat[k] = ""
  }
  END {
    if (length(n) == 0) { print "no complete native/http pair in the output" > "/dev/stderr"; exit 1 }
    for (k in n) {
      min = max = rs[k, 1]; for (i = 2; i <= n[k]; i++) { if (rs[k, i] < min) min = rs[k, i]; if (rs[k, i] > max) max = rs[k, i] }
      printf "%-9s mean:  native %8.0f events/s   http %7.0f events/s   ratio http/native %.3f (per run %.3f to %.3f)\n",
        k, sn[k] / n[k], sh[k] / n[k], (sh[k] / n[k]) / (sn[k] / n[k]), min, max
    }
  }
' "${OUT}" | tee -a "${OUT}"
