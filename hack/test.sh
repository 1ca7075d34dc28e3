#!/usr/bin/env bash
# Runs the tests with the race detector.
#   hack/test.sh        all of them (unit and e2e)
#   hack/test.sh unit   only those that need no control plane
#   hack/test.sh e2e    only those against a real kube-apiserver (bin/, see
#                       hack/build-control-plane.sh), including the short
#                       chaos suite (test/chaos; the full one is
#                       hack/test-chaos.sh); test/benchmark runs with
#                       -short (its long runs are make bench's), then
#                       every benchmark once at a tiny size
#                       (hack/test-benchmarks.sh)
# Outside macOS the race detector needs cgo, hence a C compiler. Without one
# the tests run without -race, after a one-line notice; REQUIRE_RACE=1
# makes that an error instead (for CI).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

# shellcheck source=hack/lib.sh
source hack/lib.sh
trap kill_orphaned_control_plane EXIT

mkdir -p _output/tmp
export TMPDIR="${root}/_output/tmp"

scope=${1:-all}
# A package is an e2e one if it is under a test/ directory or if its tests
# import test/controlplane (they start etcd and kube-apiserver from bin/,
# e.g. examples/allocator's): the unit scope must run on a machine that
# has not built the control plane. examples/vendor-handler is a module of
# its own: vendor_pkgs are its packages in the same scope (its e2e tests
# are in e2e/).
e2e_pkgs() {
  local cp
  cp="$(go list -m)/test/controlplane"
  # shellcheck disable=SC2016
  go list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... |
    awk -v cp="${cp}" '$1 ~ /\/test\// { print $1; next } { for (i = 2; i <= NF; i++) if ($i == cp) { print $1; next } }'
}
case "${scope}" in
  unit) pkgs=$(go list ./... | grep -vxF -f <(e2e_pkgs)); vendor_pkgs=$(cd examples/vendor-handler && go list ./... | grep -v '/e2e') ;;
  e2e) pkgs=$(e2e_pkgs); vendor_pkgs=$(cd examples/vendor-handler && go list ./... | grep '/e2e') ;;
  all) pkgs=$(go list ./...); vendor_pkgs=$(cd examples/vendor-handler && go list ./...) ;;
  *) echo "usage: $0 [unit|e2e|all]" >&2; exit 2 ;;
esac

race=(-race)
if reason=$(race_unavailable) && [[ -n "${reason}" ]]; then
  if [[ "${REQUIRE_RACE:-}" == 1 ]]; then
    echo "hack/test.sh: the race detector is required (REQUIRE_RACE=1) but unavailable: ${reason}" >&2
    exit 1
  fi
  echo "hack/test.sh: race detector off: ${reason}" >&2
  race=()
fi

# go test's own vet pass is off: make verify (hack/verify.sh, which CI runs
# first) vets every module with all of go vet's analyzers. The pass go test
# adds runs a subset of them but type-checks every dependency once more to
# compute its facts: measured on a cold build cache, 29 % more CPU than
# compiling the tests (227 s on top of 785 s for pkg/cache and
# test/workloads).
flags=(-vet=off -count=1)

# test/benchmark's tests run its benchmarks' set-ups at a small size (a
# control plane with thousands of objects, two schedulers' cold starts):
# long runs that belong to make bench, which runs them at full size. Here
# it runs with -short, which skips them and keeps the rest of the package.
bench_pkg=$(go list ./test/benchmark)
pkgs=$(printf '%s\n' ${pkgs} | grep -vx "${bench_pkg}" || true)
short_pkgs=""
[[ "${scope}" != unit ]] && short_pkgs=${bench_pkg}

# go test starts packages in the order it is given them. The longest run
# first (minutes each, against a control plane: measured in make test), so
# that the many short packages fill the cores at the end instead of one
# long package running alone.
longest="test/workloads test/chaos test/demo test/e2e test/controlplane test/dialects pkg/custominformer test/kueue test/twolevel test/operators pkg/cache test/differential"
module=$(go list -m)
ordered=""
for p in ${longest}; do
  if printf '%s\n' ${pkgs} | grep -qx "${module}/${p}"; then
    ordered+="${module}/${p} "
  fi
done
# shellcheck disable=SC2086
rest=$(printf '%s\n' ${pkgs} | grep -vxF -f <(printf '%s\n' ${ordered}) || true)
pkgs="${ordered} ${rest}"

# go test runs at most -p packages at once, GOMAXPROCS (2 here) by
# default. The packages against a control plane spend most of their minutes
# waiting on it, so two at a time leaves the cores idle for much of the
# run; TEST_PARALLEL (default 4) packages run at once instead. Each starts
# its own control plane (about 0.5 GiB).
parallel=${TEST_PARALLEL:-4}

# Every part runs even when one fails; the exit status is the first
# failure's.
status=0
note() { [[ ${status} -ne 0 ]] || status=$1; }

# test/image runs make image (static binaries for linux/amd64 and
# linux/arm64) in its TestMain, and test/deploy runs make build in a fresh
# clone: two compiles of the scheduler without the race detector, and for
# arm64, that go test would run beside the test packages. On a cold build
# cache, 4 packages at once, they took most of the 20-minute package
# timeout. Compile them here once, first and alone, with the flags of
# hack/build-image.sh (make build's -trimpath build shares the amd64
# packages: -trimpath keeps the checkout's path out of their cache keys),
# so that both tests find the packages in the cache and only link.
if printf '%s\n' ${pkgs} | grep -Eq '/test/(image|deploy)$'; then
  for arch in amd64 arm64; do
    start=${SECONDS}
    CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 GOOS=linux GOARCH=${arch} \
      go build -trimpath -buildvcs=false -mod=readonly -o /dev/null ./cmd/batch-scheduler || note $?
    echo "hack/test.sh: linux/${arch} packages for test/image and test/deploy compiled in $((SECONDS - start))s" >&2
  done
fi
# shellcheck disable=SC2086
go test ${race[@]+"${race[@]}"} "${flags[@]}" -p "${parallel}" -timeout 20m ${pkgs} || note $?
if [[ -n "${short_pkgs}" ]]; then
  # shellcheck disable=SC2086
  go test ${race[@]+"${race[@]}"} "${flags[@]}" -timeout 10m -short ${short_pkgs} || note $?
fi
# shellcheck disable=SC2086
(cd examples/vendor-handler && go test ${race[@]+"${race[@]}"} "${flags[@]}" -timeout 10m ${vendor_pkgs}) || note $?
# test/plugindiff (a module of its own: it imports kube-scheduler's plugins
# to compare ours with) needs no control plane. It runs last, not beside
# the main run: both would compile the same dependencies with the race
# detector at the same time (the likely cause of a cold make test that
# used 12 % more CPU with it beside the main run).
if [[ "${scope}" != e2e ]]; then
  (cd test/plugindiff && go test ${race[@]+"${race[@]}"} "${flags[@]}" -timeout 10m ./...) || note $?
fi
# Every benchmark once, at a tiny size, so that none rots unseen
# (hack/test-benchmarks.sh; docs/testing.md). The benchmarks of
# test/benchmark and test/perfsuite need the control plane.
if [[ "${scope}" != unit ]]; then
  hack/test-benchmarks.sh || note $?
fi
exit "${status}"
