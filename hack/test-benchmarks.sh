#!/usr/bin/env bash
# Smoke run of the benchmarks: every Benchmark function of the repository
# runs once (-benchtime=1x) at a tiny size, so that a benchmark that no
# longer builds, fails its own checks or hangs shows up in CI instead of in
# the next make bench. None of the figures it prints means anything.
#
#   hack/test-benchmarks.sh
#
# It runs, in two lanes at once:
#   A. test/benchmark's benchmarks (each starts a control plane from bin/,
#      see make control-plane), with -short -run '^$' -bench .
#      -benchtime=1x;
#   B. one after the other:
#      - the same for every other package with a func Benchmark... in its
#        tests, in each module of the repository (the main one, and
#        examples/vendor-handler and test/plugindiff should they get one):
#        pkg/..., and test/perfsuite, which starts control planes too;
#      - test/benchmark's tests without -short. make test runs that package
#        with -short, which skips TestColdStart, TestSchedulingAtScaleSmall
#        and TestSchedulingHybridSmall (each benchmark's run at a small size,
#        with checks of what it measured): they run here.
# With -short a benchmark takes a small default size (testing.Short(); the
# helper smoke() in test/benchmark): tens of nodes and a few hundred pods
# instead of thousands, seconds of fairness or of a trace instead of
# minutes. make bench and hack/bench-*.sh run without -short, at full size.
# The BENCH_* and PERF_SUITE_* variables override either size: leave them
# unset here.
#
# The race detector is on whenever hack/test.sh would turn it on
# (REQUIRE_RACE=1 makes its absence an error, as there), with the same
# build flags: run after make test, the packages come from the build cache
# and compiling costs little more than linking. BENCH_SMOKE_RACE=0 turns it
# off; BENCH_SMOKE_LANES=1 runs lane A before lane B instead of beside it.
# The lanes take about as long as each other (4 to 6 minutes each on 2
# cores); side by side they took 6.5 to 7.5 minutes, one after the other 8.5
# (docs/testing.md).
#
# Each go test call's output goes to _output/test-benchmarks/STEP.txt,
# every line prefixed with the time it came (a benchmark's result line
# comes when it ends), and is printed when the call ends; at the end, a
# table of each call's wall time and each package's own time. Every part
# runs even after one fails; the exit status is the first failure's.
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${root}/_output/tmp"
logdir=_output/test-benchmarks
rm -rf "${logdir}"
mkdir -p "${logdir}"
say() { echo "hack/test-benchmarks.sh: $*" >&2; }

race=(-race)
if [[ "${BENCH_SMOKE_RACE:-1}" == 0 ]]; then
  race=()
elif reason=$(race_unavailable) && [[ -n "${reason}" ]]; then
  if [[ "${REQUIRE_RACE:-}" == 1 ]]; then
    say "the race detector is required (REQUIRE_RACE=1) but unavailable: ${reason}"
    exit 1
  fi
  say "race detector off: ${reason}"
  race=()
fi
# hack/test.sh's flags, so that the packages it compiled are reused.
flags=(${race[@]+"${race[@]}"} -vet=off -count=1)
smoke=(-short -run '^$' -bench . -benchtime=1x)

# bench_pkgs prints the packages of the module in the current directory
# whose test files declare a benchmark.
bench_pkgs() {
  # shellcheck disable=SC2016
  go list -f '{{$d := .Dir}}{{.ImportPath}}{{range .TestGoFiles}} {{$d}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$d}}/{{.}}{{end}}' ./... |
    while read -r pkg files; do
      # shellcheck disable=SC2086
      if [[ -n "${files}" ]] && grep -q '^func Benchmark' ${files}; then
        echo "${pkg}"
      fi
    done
}

# stamp prefixes each line with the time it was read: a benchmark's
# result line comes when it ends, so the log shows how long each took.
stamp() {
  local line
  while IFS= read -r line || [[ -n "${line}" ]]; do
    printf '%(%H:%M:%S)T %s\n' -1 "${line}"
  done
}

# step NAME DIR ARGS...: go test ARGS in DIR, its output (time-stamped) in
# ${logdir}/NAME.txt, printed when it ends; its exit status and wall time
# in ${logdir}/NAME.status.
step() {
  local name=$1 dir=$2 start=${SECONDS} rc=0
  shift 2
  say "${name}: started at $(date +%H:%M:%S): (cd ${dir} && go test $*)"
  (cd "${dir}" && go test "$@") 2>&1 | stamp >"${logdir}/${name}.txt" || rc=$?
  echo "${rc} $((SECONDS - start))" >"${logdir}/${name}.status"
  {
    echo "=== hack/test-benchmarks.sh: ${name} (go test in ${dir}): exit ${rc} after $((SECONDS - start))s"
    cat "${logdir}/${name}.txt"
  } >&2
  return "${rc}"
}

module=$(go list -m)
bench_pkg=${module}/test/benchmark
main_pkgs=$(bench_pkgs | grep -vx "${bench_pkg}" || true)

lane_a() {
  step benchmarks-control-plane . "${flags[@]}" -timeout 20m "${smoke[@]}" "${bench_pkg}"
}

status=0
note() { [[ ${status} -ne 0 ]] || status=$1; }

lane_b() {
  local dir pkgs
  if [[ -n "${main_pkgs}" ]]; then
    # shellcheck disable=SC2086
    step benchmarks . "${flags[@]}" -timeout 15m "${smoke[@]}" ${main_pkgs} || note $?
  fi
  for dir in examples/vendor-handler test/plugindiff; do
    pkgs=$(cd "${dir}" && bench_pkgs)
    [[ -n "${pkgs}" ]] || continue
    # shellcheck disable=SC2086
    step "benchmarks-${dir//\//-}" "${dir}" "${flags[@]}" -timeout 15m "${smoke[@]}" ${pkgs} || note $?
  done
  step tests-without-short . "${flags[@]}" -timeout 15m -bench '^$' "${bench_pkg}" || note $?
}

if [[ "${BENCH_SMOKE_LANES:-2}" == 1 ]]; then
  lane_a || note $?
  lane_b
else
  lane_a &
  pid_a=$!
  lane_b
  wait "${pid_a}" || note $?
fi

# The summary: each step's wall time (compiling included), then each
# package's own run time from go test's last line for it.
{
  echo "=== hack/test-benchmarks.sh: summary: ${SECONDS}s in all"
  for f in "${logdir}"/*.status; do
    read -r rc secs <"${f}"
    printf '  %-28s exit %-3s %5ss\n' "$(basename "${f}" .status)" "${rc}" "${secs}"
  done
  grep -hE '^[0-9:]+ (ok|FAIL|---)[[:space:]]' "${logdir}"/*.txt | cut -d' ' -f2- | sed 's/^/  /' || true
} >&2
exit "${status}"
