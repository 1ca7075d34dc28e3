#!/usr/bin/env bash
# Regenerates everything derived from the API types in pkg/apis:
#
#   pkg/apis/batchscheduler/v1alpha1/zz_generated.deepcopy.go  controller-gen object
#   deploy/crds/*.yaml                                          controller-gen crd
#   charts/batch-scheduler/crds/*.yaml                          copies of deploy/crds
#   pkg/generated/clientset/versioned/...                       client-gen
#   pkg/generated/listers/...                                   lister-gen
#   pkg/generated/informers/externalversions/...                informer-gen
#   pkg/apis/config{,/v1alpha1}/zz_generated.deepcopy.go        deepcopy-gen
#   pkg/apis/config/v1alpha1/zz_generated.conversion.go         conversion-gen
#   pkg/apis/config/v1alpha1/zz_generated.defaults.go           defaulter-gen
#
# The generators are pinned as Go tools in hack/tools/codegen/go.mod (a
# module of its own, so their dependencies never reach the root go.mod) and
# run with `go tool -modfile=...`; the first run builds them (about a minute
# on 2 cores), later runs reuse the build cache.
#
# The outputs are removed before generating, so files of a removed type do
# not linger: deploy/crds and pkg/generated hold generated files only.
#
# Usage: hack/update-codegen.sh        (make generate)
# Env:   GO (default: go)
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO="${GO:-go}"
MODULE=github.com/batch-scheduler/batch-scheduler
APIS_PKG="${MODULE}/pkg/apis"
GROUP_VERSIONS=(batchscheduler/v1alpha1)
OUT_DIR=pkg/generated
OUT_PKG="${MODULE}/${OUT_DIR}"
CRD_DIR=deploy/crds
# Helm installs a chart's crds/ on first install and never deletes them.
CHART_CRD_DIR=charts/batch-scheduler/crds
HEADER=hack/boilerplate.go.txt

log() { printf '[update-codegen] %s\n' "$*"; }

# tool NAME ARGS...: runs a generator pinned in hack/tools/codegen.
tool() {
  "${GO}" tool -modfile=hack/tools/codegen/go.mod "$@"
}

start=${SECONDS}
input_pkgs=()
input_dirs=()
for gv in "${GROUP_VERSIONS[@]}"; do
  input_pkgs+=("${APIS_PKG}/${gv}")
  input_dirs+=("./pkg/apis/${gv}")
done

log "removing the previous output"
rm -rf "${OUT_DIR}" "${CRD_DIR}" "${CHART_CRD_DIR}"
for d in "${input_dirs[@]}"; do
  rm -f "${d}/zz_generated.deepcopy.go"
done
mkdir -p "${CRD_DIR}"

log "deepcopy and CRDs (controller-gen)"
# One comma-joined paths= argument: controller-gen reads the package list
# as a single marker value.
paths=$(IFS=,; echo "${input_dirs[*]}")
tool controller-gen \
  "object:headerFile=${HEADER}" \
  crd:crdVersions=v1 \
  "paths={${paths}}" \
  "output:crd:artifacts:config=${CRD_DIR}"
mkdir -p "${CHART_CRD_DIR}"
cp "${CRD_DIR}"/*.yaml "${CHART_CRD_DIR}/"

log "clientset (client-gen)"
client_inputs=$(IFS=,; echo "${GROUP_VERSIONS[*]}")
tool client-gen \
  --go-header-file "${HEADER}" \
  --input-base "${APIS_PKG}" \
  --input "${client_inputs}" \
  --clientset-name versioned \
  --fake-clientset=false \
  --output-dir "${OUT_DIR}/clientset" \
  --output-pkg "${OUT_PKG}/clientset"

log "listers (lister-gen)"
tool lister-gen \
  --go-header-file "${HEADER}" \
  --output-dir "${OUT_DIR}/listers" \
  --output-pkg "${OUT_PKG}/listers" \
  "${input_pkgs[@]}"

log "informers (informer-gen)"
tool informer-gen \
  --go-header-file "${HEADER}" \
  --versioned-clientset-package "${OUT_PKG}/clientset/versioned" \
  --listers-package "${OUT_PKG}/listers" \
  --output-dir "${OUT_DIR}/informers" \
  --output-pkg "${OUT_PKG}/informers" \
  "${input_pkgs[@]}"

# The configuration file's API (pkg/apis/config): an internal hub version
# and the versioned forms that convert to it, as Kubernetes components
# define their component configuration. Never served by an API server, so
# no CRD or client.
CONFIG_PKGS=("${APIS_PKG}/config" "${APIS_PKG}/config/v1alpha1")
rm -f pkg/apis/config/zz_generated.*.go pkg/apis/config/v1alpha1/zz_generated.*.go
log "configuration API: deepcopy, defaults, conversions"
tool deepcopy-gen --go-header-file "${HEADER}" --output-file zz_generated.deepcopy.go "${CONFIG_PKGS[@]}"
tool defaulter-gen --go-header-file "${HEADER}" --output-file zz_generated.defaults.go "${APIS_PKG}/config/v1alpha1"
tool conversion-gen --go-header-file "${HEADER}" --output-file zz_generated.conversion.go "${APIS_PKG}/config/v1alpha1"

log "done in $((SECONDS - start))s"
