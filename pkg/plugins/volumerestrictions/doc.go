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

// Package volumerestrictions implements the VolumeRestrictions plugin:
// it keeps a pod off nodes where one of its volumes cannot be used at the
// same time as a volume of a pod already there, with kube-scheduler's
// semantics and reasons.
//
//   - A PersistentVolumeClaim with the ReadWriteOncePod access mode may be
//     used by one pod only: while any counted pod on any node (including
//     pods placed earlier in the same cycle, so two tasks of a gang never
//     share it) uses it, the pod fits nowhere: Unschedulable with "node(s)
//     unavailable due to PersistentVolumeClaim with ReadWriteOncePod access
//     mode already in-use by another pod".
//   - In-tree disks that one node cannot mount twice: the same GCE PD
//     (unless both read-only), AWS EBS volume, iSCSI IQN (unless both
//     read-only), or RBD image (overlapping monitors, same pool and image,
//     unless both read-only) used by a counted pod on the node: Unschedulable
//     with "node(s) had no available disk".
//
// PreFilterPod reads the pod's claims (a missing one rejects the pod as
// unresolvable with `persistentvolumeclaim "name" not found`) and counts
// the pods using its ReadWriteOncePod claims; it returns Skip for a pod
// with neither such claims in use nor in-tree disks, so Filter does not
// run for it.
//
// Args: none; non-empty args are an error.
//
// Events: an assigned pod deleted (a hint retries the job only when the pod
// used a disk conflicting with a pending pod's, in any namespace since
// in-tree disks are not namespaced, or a claim of a pending pod), a node
// added, and a claim added that a pending pod uses.
package volumerestrictions
