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

// Package volumebinding implements the VolumeBinding plugin: it keeps a
// pod off nodes where its PersistentVolumeClaims cannot be satisfied and,
// before the pod is bound, binds the claims it waited for (volumes with
// WaitForFirstConsumer binding), with kube-scheduler's semantics and
// reasons.
//
// PreFilterPod (per pod) resolves the pod's claims, those of its
// persistentVolumeClaim volumes and of its generic ephemeral volumes
// ("<pod>-<volume>", which must be owned by the pod). It returns Skip for
// a pod without such volumes, so plain pods cost one loop over their
// volumes. A missing claim, a lost one, one being deleted, or an ephemeral
// claim not owned by the pod rejects the pod as unresolvable with
// kube-scheduler's message (e.g. `persistentvolumeclaim "data" not found`);
// so does an unbound claim whose class binds immediately (or that is
// pre-bound to a volume but not bound yet): "pod has unbound immediate
// PersistentVolumeClaims".
//
// Filter checks, on each node:
//   - bound claims: the volume exists ("node(s) unavailable due to one or
//     more pvc(s) bound to non-existent pv(s)") and its nodeAffinity admits
//     the node ("node(s) didn't match PersistentVolume's node affinity");
//   - unbound WaitForFirstConsumer claims: an available volume matches
//     (class, size, access modes, volume mode, selector, nodeAffinity; the
//     smallest fitting one, smaller claims first, never one volume for two
//     claims), or else the class can provision one there (a provisioner
//     other than kubernetes.io/no-provisioner, allowedTopologies admitting
//     the node); otherwise "node(s) didn't find available persistent
//     volumes to bind". When the provisioner is a CSIDriver with
//     storageCapacity true and the claim requests storage, a
//     CSIStorageCapacity of the class reachable from the node must offer
//     the size, or "node(s) did not have enough free storage". A claim
//     already given a node (annotation volume.kubernetes.io/selected-node)
//     fits only that node.
//
// All these rejections are UnschedulableAndUnresolvable, as in
// kube-scheduler.
//
// Reserve records the volumes chosen on the pod's node. A chosen volume is
// held (assumed bound to its claim) from Reserve until the informer shows
// it bound, or until Unreserve: a later pod of the same gang, and later
// cycles, never pick it for another claim.
//
// Bind does kube-scheduler's PreBind, as a Bind plugin enabled before
// DefaultBinder: it writes the chosen volumes' claimRef (and the
// pv.kubernetes.io/bound-by-controller annotation) and sets
// volume.kubernetes.io/selected-node on claims to provision, then waits,
// polling the informers every second for at most ten minutes and no
// longer than the bind call's context allows, until every claim is fully
// bound (spec.volumeName set and pv.kubernetes.io/bind-completed present,
// which the PersistentVolume controller and external provisioners do).
// It then returns Skip, so the next Bind plugin binds the pod. A pod with
// nothing to bind is skipped at once.
//
// Not supported: translating in-tree volume plugins to CSI (CSI
// migration) before checking a volume's nodeAffinity, and scoring.
//
// Args: none; non-empty args are an error.
//
// Events: PersistentVolumeClaim and PersistentVolume adds and updates,
// StorageClass adds and updates, node adds and label changes, CSIDriver
// updates and deletes, CSIStorageCapacity adds and updates, with queueing
// hints that retry a job only for claims its pods use (PVC events), and
// for StorageClass, CSIDriver changes that may matter.
package volumebinding
