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
// one host's accounting across tenants. The CRD manifests live in
// deploy/crds.
//
// The deep-copy functions in zz_generated.deepcopy.go are hand-written in the
// deepcopy-gen style; keep them in step with types.go.
//
// +k8s:deepcopy-gen=package
// +groupName=batch-scheduler.io
package v1alpha1
