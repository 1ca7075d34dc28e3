#!/usr/bin/env bash
# Fails when the generated files (see hack/update-codegen.sh) are not what
# the generators make from the current sources. The working tree is not
# touched: the inputs are copied to a temporary directory, generated there,
# and the outputs compared with the ones here (missing and extra
# files count too). Uncommitted changes are checked as they are.
#
# Usage: hack/verify-codegen.sh      (run by hack/verify.sh, make verify)
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# What update-codegen.sh reads (besides the module cache) and what it
# writes.
COPY=(go.mod go.sum hack pkg/apis pkg/generated deploy/crds charts/batch-scheduler/crds)
OUTPUTS=(pkg/apis pkg/generated deploy/crds charts/batch-scheduler/crds)

if ! (cd hack/tools/codegen && go mod tidy -diff); then
  echo "verify-codegen: hack/tools/codegen/go.mod or go.sum is not tidy: run 'go mod tidy' in hack/tools/codegen" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT

for p in "${COPY[@]}"; do
  if [[ -e "${p}" ]]; then
    mkdir -p "${tmp}/$(dirname "${p}")"
    cp -a "${p}" "${tmp}/$(dirname "${p}")/"
  fi
done

if ! out=$("${tmp}/hack/update-codegen.sh" 2>&1); then
  echo "${out}" >&2
  echo "verify-codegen: hack/update-codegen.sh failed (output above)" >&2
  exit 1
fi

stale=0
for p in "${OUTPUTS[@]}"; do
  if ! diff -ru "${p}" "${tmp}/${p}" >"${tmp}/diff" 2>&1; then
    stale=1
    sed "s|${tmp}/|regenerated/|g" "${tmp}/diff" >&2
  fi
done
if ((stale)); then
  echo "verify-codegen: generated files are stale (diff above: current vs regenerated/); run 'make generate' and commit the result" >&2
  exit 1
fi
echo "verify-codegen: generated files are up to date"
