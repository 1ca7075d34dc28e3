// Package defaultbinder implements the DefaultBinder plugin: Bind creates
// the pod's binding subresource (POST pods/<name>/binding) through the
// framework's clientset, which sets spec.nodeName. The binding carries the
// pod's UID, so a pod deleted and recreated under the same name in the
// meantime is not bound by mistake. An API error is an Error status naming
// the pod and the node; the framework then unreserves the pod and retries
// the job.
//
// Args: none; non-empty args are an error.
//
// Events: none; a binder never rejects a pod as unschedulable.
package defaultbinder
