#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# In-process scale benchmarks (pkg/cache), each against a baseline measured
# in the same run, with the ratios summarised:
#   - BenchmarkDispatch: informer -> dispatch -> default handler -> cache,
#     per pod event, against a bare informer with a no-op handler
#     (goal <= 1.2x); wall ns/op and process CPU per event;
#   - BenchmarkSnapshotScale: UpdateSnapshot after 1, 100 and 10,000
#     changes against a full clone, at 1,000 and 5,000 nodes (goal: >= 100x
#     cheaper after 1 change; cost grows with the changes, not the nodes);
#   - BenchmarkInitialSync: 5,000 nodes + 150,000 realistic pods through the
#     real informers until the handler synced (goal <= 3 s), and heap bytes
#     per pod, with and without the scheduler's transform, against bare
#     informers with a no-op handler.
# The runs of each benchmark are interleaved (baseline and case in each
# run), COUNT times. Output: _output/bench-inproc.txt.
#
# Usage: hack/bench-inproc.sh [quick]
#   quick: small sizes (-short), COUNT=1; for CI and a smoke test.
# Environment: COUNT (default 3), DISPATCH_EVENTS (default 100000),
# BENCH_NODES / BENCH_PODS (initial sync size), ONLY (a regexp of the
# benchmarks to run: Dispatch|SnapshotScale|InitialSync).

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
GO="${GO:-go}"

QUICK="${1:-}"
COUNT="${COUNT:-3}"
EVENTS="${DISPATCH_EVENTS:-100000}"
SHORT=()
if [[ "${QUICK}" == "quick" ]]; then
  COUNT=1
  EVENTS=20000
  SHORT=(-test.short)
fi
ONLY="${ONLY:-Dispatch|SnapshotScale|InitialSync}"

mkdir -p _output
OUT=_output/bench-inproc.txt
BIN=_output/bench-inproc.test
"${GO}" test -c -o "${BIN}" ./pkg/cache

{
  echo "[bench-inproc] $(date -u +%Y-%m-%dT%H:%M:%SZ) count=${COUNT} dispatch_events=${EVENTS} ${QUICK}"
  echo "[bench-inproc] machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/Mem:/{print $2}') GiB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "[bench-inproc] go: $("${GO}" version)"
} | tee "${OUT}"

run() {
  "${BIN}" -test.run '^$' -test.benchmem "${SHORT[@]}" "$@" 2>&1 | grep -E '^Benchmark' | tee -a "${OUT}"
}

for i in $(seq "${COUNT}"); do
  echo "[bench-inproc] run ${i}/${COUNT}, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "${OUT}"
  if [[ "Dispatch" =~ ${ONLY} ]]; then
    run -test.bench '^BenchmarkDispatch$' -test.benchtime "${EVENTS}x"
  fi
  if [[ "SnapshotScale" =~ ${ONLY} ]]; then
    run -test.bench '^BenchmarkSnapshotScale$' -test.benchtime 2s
  fi
  if [[ "InitialSync" =~ ${ONLY} ]]; then
    run -test.bench '^BenchmarkInitialSync$' -test.benchtime 1x
  fi
done

# Summarise: per run, each case against its baseline; then the median.
awk '
function metric(line, unit,   n, f, i) {
  n = split(line, f, /[ \t]+/)
  for (i = 2; i <= n; i++) if (f[i] == unit) return f[i-1]
  return ""
}
function median(list,   n, a, i, j, t) {
  n = split(list, a, " ")
  for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(key, v) { ratios[key] = ratios[key] (ratios[key] == "" ? "" : " ") v; if (!(key in order)) { order[key] = ++nkeys; keys[nkeys] = key } }
/^BenchmarkDispatch\/baseline/ { bw = metric($0, "ns/op"); bc = metric($0, "cpu-ns/op") }
/^BenchmarkDispatch\/informer/ && bw != "" {
  add("dispatch: wall ns/event vs bare informer (goal <= 1.2x)", metric($0, "ns/op") / bw)
  add("dispatch: CPU ns/event vs bare informer (goal <= 1.2x)", metric($0, "cpu-ns/op") / bc)
}
/^BenchmarkSnapshotScale\/nodes=[0-9]+\/baseline/ {
  split($1, p, "/"); full[p[2]] = metric($0, "update-ns/op")
  add("snapshot " p[2] ": full clone, ms", full[p[2]] / 1e6)
}
/^BenchmarkSnapshotScale\/nodes=[0-9]+\/changes=/ {
  split($1, p, "/"); sub(/-[0-9]+$/, "", p[3])
  v = metric($0, "update-ns/op")
  add("snapshot " p[2] " " p[3] ": update, us", v / 1e3)
  add("snapshot " p[2] " " p[3] ": full clone / update (goal >= 100x after 1 change)", full[p[2]] / v)
}
/^BenchmarkInitialSync\/baseline/ { split($1, p, "/"); sub(/-[0-9]+$/, "", p[3]); bs[p[3]] = metric($0, "s/sync"); bcs[p[3]] = metric($0, "cpu-s/sync"); bb[p[3]] = metric($0, "B/pod") }
/^BenchmarkInitialSync\/informers/ {
  split($1, p, "/"); sub(/-[0-9]+$/, "", p[3]); s = metric($0, "s/sync"); bp = metric($0, "B/pod")
  add("initial sync (" p[3] "): handler synced, s (goal <= 3 s)", s)
  add("initial sync (" p[3] "): wall vs bare informers", s / bs[p[3]])
  add("initial sync (" p[3] "): CPU s of the sync", metric($0, "cpu-s/sync"))
  add("initial sync (" p[3] "): CPU vs bare informers", metric($0, "cpu-s/sync") / bcs[p[3]])
  add("initial sync (" p[3] "): heap B/pod, scheduler", bp)
  add("initial sync (" p[3] "): heap B/pod, bare informers", bb[p[3]])
}
END {
  print ""
  print "[bench-inproc] summary (median of the runs; each run against its own baseline):"
  for (i = 1; i <= nkeys; i++) printf "  %-80s %10.3f   (runs: %s)\n", keys[i], median(ratios[keys[i]]), ratios[keys[i]]
}' "${OUT}" | tee -a "${OUT}"
