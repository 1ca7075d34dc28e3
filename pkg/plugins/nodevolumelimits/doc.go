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

// Package nodevolumelimits implements the NodeVolumeLimits plugin: it keeps
// a pod off nodes where attaching its CSI volumes would exceed the number
// of volumes a CSI driver can attach there, with kube-scheduler's
// semantics and reason.
//
// A node's limits are the allocatable counts of the drivers of its
// CSINode; a node without a CSINode, or a driver without a count, has no
// limit. The volumes counted are those of the pod's persistentVolumeClaim
// and generic ephemeral volumes, identified by driver and volume handle:
// from the bound PersistentVolume's CSI source, or, for a claim not bound
// yet, from its StorageClass's provisioner with a handle unique to the
// claim. The volumes on the node are those of the counted pods there,
// including pods placed earlier in the same cycle, so that a gang cannot
// overrun a limit together; a volume the node already has is not counted
// again. If, for some driver, the node's volumes plus the pod's new ones
// exceed the limit, the node is Unschedulable with "node(s) exceed max
// volume count".
//
// A claim of the pod that does not exist makes every node
// UnschedulableAndUnresolvable with kube-scheduler's message
// (`looking up PVC <namespace>/<name>: persistentvolumeclaim "<name>" not
// found`).
//
// Not supported: in-tree volumes migrated to CSI (they are not counted),
// VolumeAttachments of volumes no pod on the node uses, and the
// VolumeLimitScaling feature (CSIDriver preventPodSchedulingIfMissing).
//
// PreFilterPod returns Skip for a pod without claims, so Filter does not
// run for it.
//
// Args: none; non-empty args are an error.
//
// Events: a CSINode added, updated with a limit raised or lifted, or
// deleted while it set a limit; an assigned pod with claims deleted; a pod
// bound to a node with a volume a pending pod uses (that volume then
// counts as attached there already); a claim a pending pod uses added.
package nodevolumelimits
