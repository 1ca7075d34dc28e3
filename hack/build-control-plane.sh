#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Builds a real kube-apiserver, etcd and kube-controller-manager from Go
# modules into bin/, for end-to-end tests (envtest: KUBEBUILDER_ASSETS=bin),
# KWOK's controller (simulated kubelets), kube-scheduler for the tests
# and benchmarks that compare against it, and Kueue's manager (test/kueue).
# No prebuilt binaries: everything comes from the Go module proxy, pinned by
# the go.mod/go.sum of the tool modules under hack/tools/.
#
# Idempotent: a binary is rebuilt only when the hash of its inputs (the tool
# module's go.mod, go.sum and *.go files, the Go version, the target platform
# and the build flags below) differs from the one recorded in bin/.NAME.stamp.
#
# The three Kubernetes binaries come from modules that pin the same versions
# of every shared dependency, KWOK's module is moved to the same k8s.io
# versions and etcd's (v3.7.0, the client kube-apiserver v1.37.1 links) to
# kube-apiserver's versions of grpc, OpenTelemetry and the rest, so each
# package compiles once into the build cache and is reused by the next
# binary.
#
# KubeRay's operator (kuberay-operator) is built too, for test/operators: a
# real operator that creates gangs for batch-scheduler. v1.5.0 calls
# controller-runtime v0.22 APIs that later versions changed, so it cannot
# move to our k8s.io versions; its module instead takes the versions Kueue's
# module resolves (k8s.io v0.35.3 and the rest), keeping controller-runtime
# v0.22, so the two operators share most of their compiled packages.
#
# Kueue's manager (kueue) is built for test/kueue. Its module keeps Kueue's
# own k8s.io versions: with ours, one of its dependencies does not compile
# (see hack/tools/README.md).
#
# Two families of binaries build at the same time (see the end of this
# script); CONTROL_PLANE_JOBS=1 builds them one after the other.
#
# Helm (bin/helm) is built for test/chart, which lints and renders the
# chart with it.
#
# Usage: hack/build-control-plane.sh [kube-apiserver] [etcd] [kube-controller-manager] [kwok] [kube-scheduler] [helm] [kuberay-operator] [kueue]   (default: all)
# Env:   GO (default: go), FORCE=1 rebuilds regardless of the stamps.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
FORCE="${FORCE:-0}"
BIN="${ROOT}/bin"

KUBE_VERSION="v1.37.1"
KUBE_LDFLAGS="-s -w"
KUBE_LDFLAGS+=" -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION}"
KUBE_LDFLAGS+=" -X k8s.io/component-base/version.gitMajor=1"
KUBE_LDFLAGS+=" -X k8s.io/component-base/version.gitMinor=37"
KUBE_LDFLAGS+=" -X k8s.io/component-base/version.gitTreeState=clean"

# Helm renders and lints charts/batch-scheduler in test/chart. Its
# module raises Helm's k8s.io/* from v0.37.0 to v0.37.1, the versions of
# the Kubernetes binaries above, so it shares their compiled packages.
HELM_VERSION="v3.22.0"
HELM_LDFLAGS="-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION} -X helm.sh/helm/v3/internal/version.gitTreeState=clean"

KUEUE_VERSION="v0.17.0"
KUEUE_LDFLAGS="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=${KUEUE_VERSION}"

# Static, reproducible binaries; no C toolchain needed.
export CGO_ENABLED=0
BUILD_FLAGS=(-trimpath -buildvcs=false -mod=readonly)

log() { printf '[build-control-plane] %s\n' "$*"; }

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -d' ' -f1; else shasum -a 256 | cut -d' ' -f1; fi
}

# inputs_hash MODULE_DIR PACKAGE LDFLAGS
inputs_hash() {
  local dir="$1" pkg="$2" ldflags="$3"
  {
    printf 'recipe=2 pkg=%s ldflags=%s flags=%s cgo=%s\n' "${pkg}" "${ldflags}" "${BUILD_FLAGS[*]}" "${CGO_ENABLED}"
    "${GO}" env GOVERSION GOOS GOARCH GOAMD64 GOARM64 GOEXPERIMENT
    local f
    for f in $(cd "${dir}" && find . -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort); do
      printf '%s %s\n' "${f}" "$(sha256 <"${dir}/${f}")"
    done
  } | sha256
}

# build NAME MODULE_DIR PACKAGE LDFLAGS
build() {
  local name="$1" dir="${ROOT}/$2" pkg="$3" ldflags="$4"
  local out="${BIN}/${name}" stamp="${BIN}/.${name}.stamp"
  local want have=""
  want="$(inputs_hash "${dir}" "${pkg}" "${ldflags}")"
  [[ -f "${stamp}" ]] && have="$(cat "${stamp}")"

  if [[ "${FORCE}" != 1 && -x "${out}" && "${have}" == "${want}" ]]; then
    log "${name}: up to date (bin/${name}, inputs ${want:0:12}), skipping"
    return 0
  fi
  if [[ -x "${out}" ]]; then
    log "${name}: inputs changed (${have:0:12} -> ${want:0:12}) or FORCE=1, rebuilding"
  else
    log "${name}: bin/${name} missing, building"
  fi

  local start=${SECONDS}
  log "${name}: go mod download (${2})"
  (cd "${dir}" && "${GO}" mod download)
  log "${name}: go build ${pkg} -> bin/${name}"
  mkdir -p "${BIN}"
  rm -f "${stamp}"
  (cd "${dir}" && "${GO}" build "${BUILD_FLAGS[@]}" -ldflags "${ldflags}" -o "${out}.tmp" "${pkg}")
  mv -f "${out}.tmp" "${out}"
  printf '%s\n' "${want}" >"${stamp}"
  log "${name}: built in $((SECONDS - start))s ($(du -h "${out}" | cut -f1)): $(version_of "${name}" "${out}")"
}

# version_of NAME BINARY prints the version BINARY reports, or, for a binary
# without a --version flag, the version its tool module pins (Kueue's is
# linked in; its manager would start rather than print it).
version_of() {
  case "$1" in
    kueue) printf 'kueue %s (linked in with -X)' "${KUEUE_VERSION}" ;;
    helm) "$2" version --short 2>&1 | head -n1 ;;
    kuberay-operator) (cd "${ROOT}/hack/tools/kuberay" && "${GO}" list -m -f '{{.Path}} {{.Version}}' github.com/ray-project/kuberay/ray-operator) ;;
    *) "$2" --version 2>&1 | head -n1 ;;
  esac
}

targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=(kube-apiserver etcd kube-controller-manager kwok kube-scheduler helm kuberay-operator kueue)

build_target() {
  case "$1" in
    kube-apiserver) build kube-apiserver hack/tools/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "${KUBE_LDFLAGS}" ;;
    kube-controller-manager) build kube-controller-manager hack/tools/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "${KUBE_LDFLAGS}" ;;
    kube-scheduler) build kube-scheduler hack/tools/kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "${KUBE_LDFLAGS}" ;;
    etcd) build etcd hack/tools/etcd . "-s -w" ;;
    kwok) build kwok hack/tools/kwok sigs.k8s.io/kwok/cmd/kwok "-s -w" ;;
    helm) build helm hack/tools/helm helm.sh/helm/v3/cmd/helm "${HELM_LDFLAGS}" ;;
    kuberay-operator) build kuberay-operator hack/tools/kuberay github.com/ray-project/kuberay/ray-operator "-s -w" ;;
    kueue) build kueue hack/tools/kueue sigs.k8s.io/kueue/cmd/kueue "${KUEUE_LDFLAGS}" ;;
    *) log "unknown target: $1 (want kube-apiserver, etcd, kube-controller-manager, kwok, kube-scheduler, helm, kuberay-operator or kueue)"; return 2 ;;
  esac
}

# The targets fall into two families that share no compiled package: the
# Kubernetes one (kube-apiserver and what is aligned with it) and the
# operators (KubeRay's, then Kueue's, aligned with each other). Each family
# builds in order, so that a package compiles once and the next binary
# takes it from the build cache; the two families build at the same time
# (CONTROL_PLANE_JOBS=1 builds one after the other), so that one family's
# link steps and downloads, which leave cores idle, overlap the other's
# compiling.
kube_family=() operator_family=()
for t in "${targets[@]}"; do
  case "${t}" in
    kuberay-operator|kueue) operator_family+=("${t}") ;;
    *) kube_family+=("${t}") ;;
  esac
done

# build_family builds its arguments in order. It is never called where
# errexit is ignored (after || or &&, or in a condition): a failed go build
# must stop it before the stamp is written.
build_family() {
  local t
  for t in "$@"; do
    build_target "${t}"
  done
}

if [[ "${CONTROL_PLANE_JOBS:-2}" == 1 || ${#kube_family[@]} -eq 0 || ${#operator_family[@]} -eq 0 ]]; then
  build_family "${kube_family[@]+"${kube_family[@]}"}" "${operator_family[@]+"${operator_family[@]}"}"
  exit 0
fi
build_family "${operator_family[@]}" &
operators=$!
build_family "${kube_family[@]}" &
kube=$!
kube_status=0
wait "${kube}" || kube_status=$?
operator_status=0
wait "${operators}" || operator_status=$?
if [[ ${kube_status} -ne 0 || ${operator_status} -ne 0 ]]; then
  log "failed: ${kube_family[*]} (exit ${kube_status}); ${operator_family[*]} (exit ${operator_status})"
  exit 1
fi
