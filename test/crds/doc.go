// Package crds tests the generated CRDs (deploy/crds) and the generated
// typed clientset, listers and informers (pkg/generated) against a real
// kube-apiserver and etcd (see test/controlplane). Its tests are all in
// _test files; one control plane, with the CRDs installed, serves them.
//
// The central check is that the API server and validation.go
// (v1alpha1.ValidateGrant, v1alpha1.ValidateExternalWorkload) reach the
// same verdict on every object: the CRD schema is generated from markers
// on the types, and nothing else keeps it in step with the Go validation.
package crds
