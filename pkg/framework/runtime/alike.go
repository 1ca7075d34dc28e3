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

package runtime

import (
	"maps"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// Alike reports whether the profile's PreFilterPod and Filter plugins
// must give a and b the same verdicts on the same snapshot and cycle
// state: each of them is a framework.SpecJudge that judges both pods by
// their spec, and the pods have the same namespace, labels and spec (less
// node name, host name and subdomain). It is false in a profile with a
// plugin at those points that is not a SpecJudge.
func (f *Framework) Alike(a, b *v1.Pod) bool {
	if a == nil || b == nil || a.Namespace != b.Namespace || !maps.Equal(a.Labels, b.Labels) {
		return false
	}
	for _, p := range f.preFilterPod {
		if !judgesBySpec(p, a, b) {
			return false
		}
	}
	for _, p := range f.filter {
		if !judgesBySpec(p, a, b) {
			return false
		}
	}
	return sameSchedulingSpec(&a.Spec, &b.Spec)
}

// judgesBySpec reports whether p judges both pods by their spec alone.
func judgesBySpec(p framework.Plugin, a, b *v1.Pod) bool {
	j, ok := p.(framework.SpecJudge)
	return ok && j.JudgesBySpec(a) && j.JudgesBySpec(b)
}

// sameSchedulingSpec compares two pod specs but for the fields that name
// one pod (its host name and subdomain, as an indexed Job sets them) or
// its placement.
func sameSchedulingSpec(a, b *v1.PodSpec) bool {
	x, y := *a, *b
	x.NodeName, y.NodeName = "", ""
	x.Hostname, y.Hostname = "", ""
	x.Subdomain, y.Subdomain = "", ""
	return apiequality.Semantic.DeepEqual(x, y)
}
