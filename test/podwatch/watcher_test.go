package podwatch

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

func watchedPod(name, uid, node, cpu, gang string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	if gang != "" {
		p.Annotations = map[string]string{framework.GroupNameAnnotation: gang, framework.MinAvailableAnnotation: "2"}
	}
	return p
}

func phase(p *v1.Pod, phase v1.PodPhase) *v1.Pod {
	p.Status.Phase = phase
	return p
}

// The watcher reports each broken guarantee, and nothing for a sound
// sequence.
func TestWatcherReportsViolations(t *testing.T) {
	tests := []struct {
		name string
		// steps are pod states applied in order (nil Spec.NodeName
		// change = update); deleted names are deleted.
		steps    []*v1.Pod
		external Capacity
		want     string // violation kind, "" for none
	}{
		{name: "sound", steps: []*v1.Pod{watchedPod("a", "1", "", "1", ""), watchedPod("a", "1", "n1", "1", "")}},
		{name: "moved", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1", ""), watchedPod("a", "1", "n2", "1", "")}, want: "double-bind"},
		{name: "overcommit", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1500m", ""), watchedPod("b", "2", "n1", "1", "")}, want: "overcommit"},
		{name: "external", steps: []*v1.Pod{watchedPod("a", "1", "n1", "1500m", "")}, external: Capacity{MilliCPU: 1000}, want: "overcommit"},
		{name: "below quorum", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "", "100m", "g")}, want: "below-quorum"},
		{name: "gang whole", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g")}},
		// A member of a whole gang that fails is not a start below quorum.
		{name: "member ends", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed)}},
		// Its replacement bound while the others of the gang are gone is.
		{name: "restart below quorum", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed), phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodSucceeded),
			watchedPod("g-2", "3", "n2", "100m", "g")}, want: "below-quorum"},
		// Both replacements bound together are a whole gang again.
		{name: "restart whole", steps: []*v1.Pod{watchedPod("g-0", "1", "n1", "100m", "g"), watchedPod("g-1", "2", "n2", "100m", "g"),
			phase(watchedPod("g-1", "2", "n2", "100m", "g"), v1.PodFailed), phase(watchedPod("g-0", "1", "n1", "100m", "g"), v1.PodFailed),
			watchedPod("g-2", "3", "n2", "100m", "g"), watchedPod("g-3", "4", "n1", "100m", "g")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			ext := func(string, time.Time) Capacity { return tc.external }
			w := New(client, "ns", map[string]Capacity{"n1": {MilliCPU: 2000, Memory: 1 << 30, Pods: 10}, "n2": {MilliCPU: 2000, Memory: 1 << 30, Pods: 10}}, ext)
			w.Settle = 200 * time.Millisecond
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if err := w.Start(ctx); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) { return w.Live(), nil }); err != nil {
				t.Fatal("the watcher never watched")
			}
			pods := client.CoreV1().Pods("ns")
			for _, p := range tc.steps {
				var err error
				if _, getErr := pods.Get(ctx, p.Name, metav1.GetOptions{}); getErr == nil {
					_, err = pods.Update(ctx, p, metav1.UpdateOptions{})
				} else {
					_, err = pods.Create(ctx, p, metav1.CreateOptions{})
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// Let the events arrive and a quorum check pass its settle time.
			var got []Violation
			_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
				got = w.Violations(nil)
				return tc.want != "" && len(got) > 0, nil
			})
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations %v, want none", got)
			case tc.want != "" && (len(got) == 0 || got[0].Kind != tc.want):
				t.Errorf("violations %v, want one of kind %s", got, tc.want)
			}
		})
	}
}

// A pod the load created and the watcher never saw is reported.
func TestWatcherReportsUnseenPods(t *testing.T) {
	w := New(fake.NewClientset(), "ns", nil, nil)
	got := w.Violations([]types.UID{"never-seen"})
	if len(got) != 1 || got[0].Kind != "missed" || !strings.Contains(got[0].Message, "never-seen") {
		t.Errorf("Violations = %v, want one missed pod never-seen", got)
	}
}

// Gangs reports each gang's peak and time below quorum, with the gang
// rule the test gives.
func TestWatcherGangStats(t *testing.T) {
	client := fake.NewClientset()
	w := New(client, "ns", nil, nil)
	w.Settle = time.Hour
	w.GangOf = ControllerGang("Job", func(string) int { return 3 })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) { return w.Live(), nil }); err != nil {
		t.Fatal("the watcher never watched")
	}
	for i, node := range []string{"n1", "n2"} {
		p := watchedPod(fmt.Sprintf("j-%d", i), fmt.Sprint(i), node, "100m", "")
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "j-uid", Controller: new(true)}}
		if _, err := client.CoreV1().Pods("ns").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var got GangStats
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		got = w.Gangs()["j"]
		return got.Running == 2 && got.BelowQuorum > 0, nil
	})
	if err != nil || got.Quorum != 3 || got.Peak != 2 {
		t.Errorf("Gangs()[j] = %+v, want quorum 3, 2 running, peak 2, some time below quorum", got)
	}
}
