/*
Copyright The batch-scheduler Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
