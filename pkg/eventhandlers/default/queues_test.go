package defaulthandler

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// A Volcano PodGroup names its job's queue in spec.queue; no other
// dialect's group object names one.
func TestPodGroupQueue(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*unstructured.Unstructured) *framework.GroupPolicy
		spec   map[string]any
		want   string
	}{
		{name: "volcano", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2), "queue": "team-a"}, want: "team-a"},
		{name: "volcano without a queue", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2)}},
		{name: "volcano with a queue that is not a string", policy: minMemberPolicy(framework.GroupKindVolcano),
			spec: map[string]any{"minMember": int64(2), "queue": int64(7)}},
		{name: "scheduler-plugins", policy: minMemberPolicy(framework.GroupKindCoscheduling),
			spec: map[string]any{"minMember": int64(2), "queue": "team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy(obj(tt.spec))
			if p == nil || p.Err != nil || p.MinMember != 2 {
				t.Fatalf("policy %+v, want minMember 2", p)
			}
			if p.Queue != tt.want {
				t.Errorf("queue %q, want %q", p.Queue, tt.want)
			}
		})
	}
}
