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

// Package volumeutil holds the volume helpers the in-tree volume plugins
// share.
package volumeutil

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// ClaimName returns the name of the PersistentVolumeClaim behind vol, a
// volume of pod: the claim it names, or the one Kubernetes makes for a
// generic ephemeral volume (isEphemeral). ok is false for a volume that
// has no claim.
func ClaimName(pod *v1.Pod, vol *v1.Volume) (name string, isEphemeral, ok bool) {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName, false, true
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, vol), true, true
	}
	return "", false, false
}

// ClaimHint is the queueing hint of PersistentVolumeClaim adds and
// updates for the volume plugins: Queue when the claim is one a pending
// pod of the job uses, named or ephemeral; QueueSkip otherwise.
func ClaimHint(logger klog.Logger, job *framework.QueuedJob, _, newObj any) (framework.QueueingHint, error) {
	pvc, ok := newObj.(*v1.PersistentVolumeClaim)
	if !ok || pvc == nil {
		return framework.Queue, fmt.Errorf("queueing hint: want a *v1.PersistentVolumeClaim, got %T", newObj)
	}
	for _, pod := range job.Pods {
		if pod.Namespace != pvc.Namespace {
			continue
		}
		for i := range pod.Spec.Volumes {
			if n, _, ok := ClaimName(pod, &pod.Spec.Volumes[i]); ok && n == pvc.Name {
				logger.V(5).Info("A claim a pending pod uses changed", "pod", klog.KObj(pod), "pvc", klog.KObj(pvc))
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}
