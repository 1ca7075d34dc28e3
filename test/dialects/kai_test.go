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
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

var kaiGVR = schema.GroupVersionResource{Group: "scheduling.run.ai", Version: "v2alpha2", Resource: "podgroups"}

// kaiConditionIs matches a KAI PodGroup whose scheduling condition of
// the pool "default" is True with a message containing msg; with msg ""
// it matches one that has no such entry.
func kaiConditionIs(msg string) func(u *unstructured.Unstructured) bool {
	return func(u *unstructured.Unstructured) bool {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "schedulingConditions")
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != "UnschedulableOnNodePool" || m["nodePool"] != "default" {
				continue
			}
			got, _ := m["message"].(string)
			return msg != "" && m["status"] == "True" && strings.Contains(got, msg)
		}
		return msg == ""
	}
}

// A KAI-Scheduler PodGroup with sub-groups, as an inference service
// spells it: decode (2 pods within one rack), prefill (2 within one
// rack) and a router (1, anywhere), pods joining them by the label
// kai.scheduler/subgroup-name. Five nodes in racks of 2, 1, 1 and 1 hold
// five pods, which a one-level gang of 5 would take, but only one of the
// two racked roles: nothing starts, the pods and the PodGroup's
// UnschedulableOnNodePool condition say which sub-group is held back. A
// second node in a rack starts all, each role within its rack, and the
// condition goes.
func TestKAIPodGroupSubGroups(t *testing.T) {
	ns := createNamespace(t)
	key := "e2e.batch-scheduler.io/rack-" + utilrand.String(5)
	racks := map[string]map[string]bool{
		"x": addRack(t, key, "x", 2, "1"),
		"y": addRack(t, key, "y", 1, "1"),
		"z": addRack(t, key, "z", 1, "1"),
		"w": addRack(t, key, "w", 1, "1"),
	}
	startScheduler(t)
	within := map[string]any{"requiredTopologyLevel": key}
	createObject(t, kaiGVR, ns, podGroup("scheduling.run.ai/v2alpha2", ns, "kp", map[string]any{
		"minMember": int64(1),
		"subGroups": []any{
			map[string]any{"name": "decode", "minMember": int64(2), "topologyConstraint": within},
			map[string]any{"name": "prefill", "minMember": int64(2), "topologyConstraint": within},
			map[string]any{"name": "router", "minMember": int64(1)},
		},
	}))
	roles := map[string]int{"decode": 2, "prefill": 2, "router": 1}
	for role, n := range roles {
		for i := range n {
			createPod(t, gangPod(ns, fmt.Sprintf("kp-%s-%d", role, i)).Annotation(framework.KAIPodGroupAnnotation, "kp").
				Label(framework.KAISubGroupLabel, role).Obj())
		}
	}
	held := "must run within one " + key + " domain"
	waitUnschedulable(t, ns, "kp-prefill-0", `sub-group "prefill" of gang `+ns+`/kp`, held)
	// The condition carries the message of the first waiting pod by name.
	waitObject(t, kaiGVR, ns, "kp", "the UnschedulableOnNodePool condition with the message of pod kp-decode-0",
		func(u *unstructured.Unstructured) bool {
			p, err := cp.Client.CoreV1().Pods(ns).Get(t.Context(), "kp-decode-0", metav1.GetOptions{})
			if err != nil {
				return false
			}
			for _, c := range p.Status.Conditions {
				if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
					return strings.Contains(c.Message, "gang "+ns+"/kp") && kaiConditionIs(c.Message)(u)
				}
			}
			return false
		})
	stayBound(t, ns, 0, "only one rack holds a racked role of 2")

	for n := range addRack(t, key, "y", 1, "1") {
		racks["y"][n] = true
	}
	waitBound(t, ns, 5, "a second rack of 2 holds the other role")
	in := rackOf(t, ns, racks)
	for _, role := range []string{"decode", "prefill"} {
		if a, b := in["kp-"+role+"-0"], in["kp-"+role+"-1"]; a == "" || a != b {
			t.Errorf("%s in racks %q and %q, want one", role, a, b)
		}
	}
	waitObject(t, kaiGVR, ns, "kp", "no UnschedulableOnNodePool condition once placed", kaiConditionIs(""))
}
