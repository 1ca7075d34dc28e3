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

// Package volumezone implements the VolumeZone plugin: it keeps a pod off
// nodes outside the zones and regions of the PersistentVolumes its claims
// are bound to, with kube-scheduler's semantics and reasons.
//
// The zone and region of a volume are its labels topology.kubernetes.io/
// zone and /region and their deprecated failure-domain.beta.kubernetes.io
// forms; a value may list several zones separated by "__". A node fits
// when, for every such label of every bound volume of the pod, the node has
// the label (in either form) with one of the listed values. A node with
// none of these labels fits any volume. A mismatch is
// UnschedulableAndUnresolvable with "node(s) had no available volume zone".
//
// PreFilterPod resolves the pod's persistentVolumeClaim volumes. A claim
// of a WaitForFirstConsumer class that is not bound yet is left to
// VolumeBinding. A missing claim, class or volume, or an unbound claim of
// any other class, rejects the pod as unresolvable with kube-scheduler's
// message (e.g. `persistentvolumeclaim "data" not found`, "PersistentVolume
// had no name"). It returns Skip when no bound volume has a zone or
// region label, so Filter does not run.
//
// Args: none; non-empty args are an error.
//
// Events: a StorageClass added (WaitForFirstConsumer ones only), a node
// added or relabelled, a claim a pending pod uses added or updated, a
// volume added or its zone labels changed.
package volumezone
