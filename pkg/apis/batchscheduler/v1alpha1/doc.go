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

// Package v1alpha1 holds the batch-scheduler.io/v1alpha1 API: objects that
// describe capacity managed outside Kubernetes, which custom informers feed
// into the scheduler.
//
//   - Grant: an external allocator (Mesos-like) grants this framework
//     capacity on a host.
//   - ExternalWorkload: something outside Kubernetes (a VM, a reservation,
//     ...) uses resources on a host.
//
// Both kinds are cluster-scoped: they describe a host (a Node), and Nodes
// are cluster-scoped, so a namespace would add nothing but a way to split
// one host's accounting across tenants.
//
// Generated from the markers in this package by hack/update-codegen.sh
// (make generate): the deep-copy functions (zz_generated.deepcopy.go), the
// CRD manifests in deploy/crds, and the typed clientset, listers and
// informers under pkg/generated. The CRDs carry the same rules as
// ValidateGrant and ValidateExternalWorkload, so an API server rejects what
// those reject; test/crds checks that against a real kube-apiserver.
//
// +kubebuilder:object:generate=true
// +groupName=batch-scheduler.io
// +groupGoName=BatchScheduler
package v1alpha1
