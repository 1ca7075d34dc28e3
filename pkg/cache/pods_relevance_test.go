package cache

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

func TestSchedulingRelevantChange(t *testing.T) {
	base := st.MakePod().Name("p").Req(map[v1.ResourceName]string{v1.ResourceCPU: "1"}).Obj()
	claimName := "p-gpu-abc12"
	tests := []struct {
		name   string
		change func(p *v1.Pod)
		want   bool
	}{
		{"nothing", func(*v1.Pod) {}, false},
		{"a condition the scheduler wrote", func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
		}, false},
		{"a label", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
		{"the claim made from its template", func(p *v1.Pod) {
			p.Status.ResourceClaimStatuses = []v1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: &claimName}}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base.DeepCopy()
			tt.change(p)
			if got := schedulingRelevantChange(base, p); got != tt.want {
				t.Errorf("schedulingRelevantChange = %v, want %v", got, tt.want)
			}
		})
	}
}
