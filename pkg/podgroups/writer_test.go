package podgroups

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// testRules are the status rules of the dialects whose status is written,
// as the table of pkg/dialects gives them.
var testRules = Rules{
	framework.GroupKindNative:       NativeCondition,
	framework.GroupKindCoscheduling: CoschedulingPhase,
	framework.GroupKindVolcano:      VolcanoStatus,
}

type jobSource map[framework.JobID]*framework.JobInfo

func (s jobSource) Job(id framework.JobID) (*framework.JobInfo, bool) {
	j, ok := s[id]
	return j, ok
}

// The writer writes a phase once, and not again while nothing changes.
func TestWriterWritesOnlyChanges(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": "g", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"minMember": int64(3)},
	}}
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "PodGroupList"}, pg.DeepCopy())
	j := job(0, 3, 0, 0, 0)
	j.SetGroupPolicy(framework.GroupKindCoscheduling, &framework.GroupPolicy{MinMember: 3})
	w := New(client, jobSource{j.ID: j}, testRules)
	w.ObjectChanged(framework.GroupKindCoscheduling, gvr, pg, false)
	k := Key{Kind: framework.GroupKindCoscheduling, Namespace: "ns", Name: "g"}
	updates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "update" && a.GetSubresource() == "status" {
				n++
			}
		}
		return n
	}
	for range 3 {
		if err := w.sync(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if n := updates(); n != 1 {
		t.Fatalf("%d status updates, want 1", n)
	}
	got, err := client.Resource(gvr).Namespace("ns").Get(context.Background(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := currentPhase(got); p != CoschedulingScheduled {
		t.Fatalf("phase %q, want %q", p, CoschedulingScheduled)
	}
	// The informer reports the written object back: nothing to write.
	w.ObjectChanged(framework.GroupKindCoscheduling, gvr, got, false)
	if err := w.sync(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	if n := updates(); n != 1 {
		t.Fatalf("%d status updates after the object came back, want 1", n)
	}
}
