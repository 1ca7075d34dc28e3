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

package dialects

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// IgnoredGroupSignals lists, one message each, the gang annotations and
// labels of the built-in dialects on pod that the scheduler ignores, with
// why: an empty group name, a quorum on a pod that names no group, a
// job-gang opt-in that is not "true" or whose pod no Job controls. A pod
// that carries them is scheduled as if they were absent, which is rarely
// what its author meant, so the scheduler reports them on the pod (see
// the scheduler's IgnoredAnnotation event). Problems that stop a gang
// from being scheduled are not listed here: they are the job's
// ValidationError.
func IgnoredGroupSignals(pod *v1.Pod) []string {
	var out []string
	for _, key := range []string{framework.GroupNameAnnotation, framework.VolcanoGroupNameAnnotation} {
		if v, ok := pod.Annotations[key]; ok && v == "" {
			out = append(out, fmt.Sprintf("annotation %s is empty, so it names no gang; the pod is scheduled on its own", key))
		}
	}
	if v, ok := pod.Labels[framework.CoschedulingPodGroupLabel]; ok && v == "" {
		out = append(out, fmt.Sprintf("label %s is empty, so it names no gang; the pod is scheduled on its own", framework.CoschedulingPodGroupLabel))
	}
	if v, ok := pod.Annotations[framework.JobGangAnnotation]; ok {
		switch {
		case v == "false":
			// Opts the Job's pods out of an inferred gang.
		case v != "true":
			out = append(out, fmt.Sprintf("annotation %s=%s is ignored: only \"true\" opts the pods of a Job into one gang, and \"false\" out",
				framework.JobGangAnnotation, framework.QuoteValue(v)))
		case len(matchJobOptIn(pod)) == 0:
			out = append(out, fmt.Sprintf("annotation %s=true is ignored: no batch/v1 Job controls the pod", framework.JobGangAnnotation))
		}
	}
	if v, ok := pod.Annotations[framework.MinAvailableAnnotation]; ok && len(builtin.Explicit(pod)) == 0 {
		out = append(out, fmt.Sprintf("annotation %s=%s is ignored: the pod names no gang (set %s too)",
			framework.MinAvailableAnnotation, framework.QuoteValue(v), framework.GroupNameAnnotation))
	}
	return out
}
