#!/usr/bin/env bash
# Static checks: formatting, vet, a tidy go.mod, and up-to-date generated
# files (hack/verify-codegen.sh).
set -o errexit -o nounset -o pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

unformatted=$(gofmt -l $(git ls-files '*.go'))
if [[ -n "${unformatted}" ]]; then
  echo "gofmt would change:" >&2
  echo "${unformatted}" >&2
  exit 1
fi

go vet ./...

tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
cp go.mod go.sum "${tmp}/"
go mod tidy
if ! diff -q go.mod "${tmp}/go.mod" >/dev/null || ! diff -q go.sum "${tmp}/go.sum" >/dev/null; then
  cp "${tmp}/go.mod" "${tmp}/go.sum" .
  echo "go.mod or go.sum is not tidy: run 'go mod tidy'" >&2
  exit 1
fi
# Every Kubernetes staging module at one version, the one the e2e control
# plane is built from.
want=v0.37.1
skew=$(go list -m -f '{{.Path}} {{.Version}}' k8s.io/api k8s.io/apimachinery k8s.io/client-go \
  k8s.io/component-base k8s.io/component-helpers k8s.io/apiserver k8s.io/apiextensions-apiserver | awk -v want="${want}" '$2 != want')
if [[ -n "${skew}" ]]; then
  echo "k8s.io modules must all be at ${want}; found:" >&2
  echo "${skew}" >&2
  exit 1
fi
hack/verify-codegen.sh
echo "verify: ok"
