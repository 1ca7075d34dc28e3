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
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// batchv1Job is a suspended Job whose pod template opts in to gang
// scheduling; no Job controller runs here, so tests create its pods.
type batchv1Job struct {
	Name, Namespace          string
	Parallelism, Completions int32
	Suspend                  bool
	// NoOptIn leaves the opt-in annotation out of the pod template.
	NoOptIn bool
}

func (j *batchv1Job) create(t *testing.T) types.UID {
	t.Helper()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: j.Namespace},
		Spec: batchv1.JobSpec{
			Parallelism: &j.Parallelism,
			Completions: &j.Completions,
			Suspend:     &j.Suspend,
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{framework.JobGangAnnotation: "true"}},
				Spec: v1.PodSpec{
					SchedulerName: "batch-scheduler",
					RestartPolicy: v1.RestartPolicyNever,
					Containers:    []v1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}
	if j.NoOptIn {
		job.Spec.Template.Annotations = nil
	}
	created, err := cp.Client.BatchV1().Jobs(j.Namespace).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Job %s/%s: %v", j.Namespace, j.Name, err)
	}
	return created.UID
}
