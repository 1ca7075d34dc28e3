#!/usr/bin/env bash
# Static checks: formatting, license headers, vet, a tidy go.mod, and up-to-date generated
# files (hack/verify-codegen.sh).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "${unformatted}" ]]; then
  echo "gofmt would change:" >&2
  echo "${unformatted}" >&2
  exit 1
fi

# Every Go file carries the license header (hack/boilerplate.go.txt),
# after its build constraint if it has one.
unlicensed=$(git ls-files '*.go' | xargs grep -L 'Copyright The batch-scheduler Authors' || true)
if [[ -n "${unlicensed}" ]]; then
  echo "missing the license header of hack/boilerplate.go.txt:" >&2
  echo "${unlicensed}" >&2
  exit 1
fi

# The main module, the vendor example, which is a module of its own
# (built against this one through a replace directive), and
# test/plugindiff, which compares our plugins with kube-scheduler's own
# (k8s.io/kubernetes, kept out of the main module), and hack/tools/image,
# make image's packer: unlike the other hack/tools modules, which only pin
# upstream binaries, it holds code of its own. It links no k8s.io module,
# so the version check below has nothing to find there.
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
for mod in . examples/vendor-handler test/plugindiff hack/tools/image; do
  (
    cd "${mod}"
    # With the flags the static builds use (make build, make image, the
    # image and deploy tests' packages compiled by hack/test.sh, and the
    # control plane's tools, which test/plugindiff shares Kubernetes'
    # packages with), go vet compiles each dependency into the build cache
    # under the same key as those builds, so a cold CI run compiles it once
    # instead of once for vet and once for them.
    CGO_ENABLED=0 go vet -trimpath ./...
    cp go.mod go.sum "${tmp}/"
    go mod tidy
    if ! diff -q go.mod "${tmp}/go.mod" >/dev/null || ! diff -q go.sum "${tmp}/go.sum" >/dev/null; then
      cp "${tmp}/go.mod" "${tmp}/go.sum" .
      echo "${mod}: go.mod or go.sum is not tidy: run 'go mod tidy' there" >&2
      exit 1
    fi
    # Every Kubernetes staging module at one version, the one the e2e
    # control plane is built from.
    want=v0.37.1
    skew=$(go list -m -f '{{.Path}} {{.Version}}' all | awk -v want="${want}" \
      '$1 ~ /^k8s\.io\/(api|apimachinery|client-go|component-base|component-helpers|apiserver|apiextensions-apiserver)$/ && $2 != want')
    if [[ -n "${skew}" ]]; then
      echo "${mod}: k8s.io modules must all be at ${want}; found:" >&2
      echo "${skew}" >&2
      exit 1
    fi
  )
done
hack/verify-codegen.sh
echo "verify: ok"
