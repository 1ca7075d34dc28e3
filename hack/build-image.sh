#!/usr/bin/env bash
set -o errexit -o nounset -o pipefail

# Builds batch-scheduler's OCI image without a container engine (make
# image; docs/image.md): cross-compiles a static binary per platform, then
# hack/tools/image (bin/oci-image) packs them into one multi-architecture
# OCI image layout with an SPDX SBOM per platform attached as a referrer.
#
#   ${IMAGE_OUTPUT}/oci/                      the OCI image layout (index.json, blobs/)
#   ${IMAGE_OUTPUT}/sbom-ARCH.spdx.json       the SBOMs, also in the layout
#   ${IMAGE_OUTPUT}/bin/ARCH/batch-scheduler  the binaries packed
#
# Env (make image sets the first four from the Makefile's variables):
#   VERSION, GIT_COMMIT, BUILD_DATE   the version, commit and build time (RFC 3339) of the
#                                     labels; BUILD_DATE also dates the files of the layer
#   LDFLAGS                           the Makefile's -X flags (the version --version prints)
#   IMAGE_OUTPUT                      default _output/image
#   IMAGE_PLATFORMS                   default linux/amd64,linux/arm64 (comma-separated)
#   IMAGE_REPOSITORY, IMAGE_TAG       the name recorded in the layout (default batch-scheduler,
#                                     and VERSION with '+' turned into '-')
#   IMAGE_SOURCE                      default https://github.com/batch-scheduler/batch-scheduler
#   IMAGE_TARBALL                     if set, also a docker-style tarball of the host's platform there
#   SOURCE_DATE_EPOCH                 if set, dates the layer's files instead of BUILD_DATE
#   GO (default go), FORCE=1          rebuild bin/oci-image regardless of its stamp
#
# The same commit, BUILD_DATE and Go version give the same digests: the
# binaries are built with -trimpath and fixed flags, and the layer's bytes
# depend only on the binary and its date.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GO="${GO:-go}"
FORCE="${FORCE:-0}"
BIN="${ROOT}/bin"

: "${VERSION:?VERSION is not set; run make image}"
: "${GIT_COMMIT:?GIT_COMMIT is not set; run make image}"
: "${BUILD_DATE:?BUILD_DATE is not set; run make image}"
: "${LDFLAGS?LDFLAGS is not set; run make image}"
OUT="${IMAGE_OUTPUT:-${ROOT}/_output/image}"
PLATFORMS="${IMAGE_PLATFORMS:-linux/amd64,linux/arm64}"
REPOSITORY="${IMAGE_REPOSITORY:-batch-scheduler}"
TAG="${IMAGE_TAG:-${VERSION//+/-}}"
SOURCE="${IMAGE_SOURCE:-https://github.com/batch-scheduler/batch-scheduler}"

# Static binaries, as the image has no C library. The micro-architecture
# levels are pinned to the defaults so that a GOAMD64 or GOARM64 in the
# builder's environment cannot make an image that fails on older CPUs.
export CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0
BUILD_FLAGS=(-trimpath -buildvcs=false -mod=readonly)
# Stripped of the symbol table and DWARF (a third of the size); stack
# traces and profiles still name functions (the runtime keeps its own
# tables).
BIN_LDFLAGS="-s -w ${LDFLAGS}"

log() { printf '[build-image] %s\n' "$*"; }

sha256() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum | cut -d' ' -f1; else shasum -a 256 | cut -d' ' -f1; fi
}

# build_tool builds hack/tools/image into bin/oci-image unless bin/.oci-image.stamp
# holds the hash of its inputs, as hack/build-control-plane.sh does for the
# control plane.
build_tool() {
  local dir="${ROOT}/hack/tools/image" out="${BIN}/oci-image" stamp="${BIN}/.oci-image.stamp"
  local want have=""
  want="$(
    {
      printf 'recipe=1 flags=%s cgo=%s\n' "${BUILD_FLAGS[*]}" "${CGO_ENABLED}"
      GOOS= GOARCH= "${GO}" env GOVERSION GOOS GOARCH
      for f in $(cd "${dir}" && find . -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' \) | LC_ALL=C sort); do
        printf '%s %s\n' "${f}" "$(sha256 <"${dir}/${f}")"
      done
    } | sha256
  )"
  [[ -f "${stamp}" ]] && have="$(cat "${stamp}")"
  if [[ "${FORCE}" != 1 && -x "${out}" && "${have}" == "${want}" ]]; then
    return 0
  fi
  log "oci-image: building bin/oci-image (hack/tools/image)"
  mkdir -p "${BIN}"
  rm -f "${stamp}"
  (cd "${dir}" && "${GO}" build "${BUILD_FLAGS[@]}" -o "${out}.tmp" .)
  mv -f "${out}.tmp" "${out}"
  printf '%s\n' "${want}" >"${stamp}"
}

start=${SECONDS}
# Absolute, as the binaries are built from the repository's root and the
# tool runs here.
mkdir -p "${OUT}"
OUT="$(cd "${OUT}" && pwd)"
build_tool

binaries=()
IFS=, read -r -a platforms <<<"${PLATFORMS}"
for platform in "${platforms[@]}"; do
  os="${platform%%/*}" arch="${platform#*/}"
  if [[ "${os}" != linux || -z "${arch}" || "${arch}" == */* ]]; then
    log "IMAGE_PLATFORMS: ${platform} is not linux/ARCH"
    exit 2
  fi
  bin="${OUT}/bin/${arch}/batch-scheduler"
  t=${SECONDS}
  mkdir -p "$(dirname "${bin}")"
  (cd "${ROOT}" && GOOS="${os}" GOARCH="${arch}" "${GO}" build "${BUILD_FLAGS[@]}" -ldflags "${BIN_LDFLAGS}" -o "${bin}" ./cmd/batch-scheduler)
  log "${platform}: go build in $((SECONDS - t))s ($(du -h "${bin}" | cut -f1))"
  binaries+=(--binary "${platform}=${bin}")
done

# Written afresh: blobs of an earlier build would stay in blobs/ unreferenced.
rm -rf "${OUT}/oci"
args=(
  "${binaries[@]}"
  --output "${OUT}/oci" --sbom-dir "${OUT}"
  --version "${VERSION}" --revision "${GIT_COMMIT}" --created "${BUILD_DATE}"
  --source "${SOURCE}" --repository "${REPOSITORY}" --tag "${TAG}"
)
[[ -n "${SOURCE_DATE_EPOCH:-}" ]] && args+=(--source-date-epoch "${SOURCE_DATE_EPOCH}")
[[ -n "${IMAGE_TARBALL:-}" ]] && args+=(--tarball "${IMAGE_TARBALL}")
t=${SECONDS}
"${BIN}/oci-image" "${args[@]}"
log "packed in $((SECONDS - t))s; $((SECONDS - start))s in all"
