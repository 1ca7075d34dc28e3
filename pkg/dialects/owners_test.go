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
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// object builds an unstructured object of kind named ns/o with spec and
// status.
func object(kind string, spec, status map[string]any) *unstructured.Unstructured {
	o := map[string]any{"kind": kind, "metadata": map[string]any{"name": "o", "namespace": "ns"}}
	if spec != nil {
		o["spec"] = spec
	}
	if status != nil {
		o["status"] = status
	}
	return &unstructured.Unstructured{Object: o}
}

type policyCase struct {
	name        string
	spec        map[string]any
	status      map[string]any
	wantMin     int32
	wantErr     string // substring; "" none
	wantNil     bool
	independent bool
}

func runPolicyCases(t *testing.T, kind string, policy func(*unstructured.Unstructured) *framework.GroupPolicy, fields [][]string, tests []policyCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := object(kind, tt.spec, tt.status)
			p := policy(u)
			// The informer stores slim objects: the policy of the slim
			// object is the same.
			slim, err := Slimmer(fields...)(u.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			ps := policy(slim.(*unstructured.Unstructured))
			if tt.wantNil {
				if p != nil || ps != nil {
					t.Fatalf("policy %+v (slim %+v), want none", p, ps)
				}
				return
			}
			if p == nil || ps == nil {
				t.Fatalf("no policy (%v, slim %v)", p, ps)
			}
			if (p.Err == nil) != (ps.Err == nil) || p.MinMember != ps.MinMember || p.Independent != ps.Independent || !sameRules(p.SubGroups, ps.SubGroups) {
				t.Errorf("the slim object's policy %+v differs from the object's %+v", ps, p)
			}
			if tt.wantErr != "" {
				if p.Err == nil || !strings.Contains(p.Err.Error(), tt.wantErr) || !strings.Contains(p.Err.Error(), "ns/o") {
					t.Fatalf("err %v, want one naming ns/o and containing %q", p.Err, tt.wantErr)
				}
				if p.MinMember != 0 {
					t.Errorf("a broken policy has a quorum %d", p.MinMember)
				}
				return
			}
			if p.Err != nil || p.MinMember != tt.wantMin || p.Independent != tt.independent {
				t.Fatalf("policy %+v, want minMember %d independent %v", p, tt.wantMin, tt.independent)
			}
		})
	}
}

func TestJobOwnerPolicy(t *testing.T) {
	runPolicyCases(t, "Job", jobPolicy(true), jobFields, []policyCase{
		{name: "parallelism", spec: map[string]any{"parallelism": int64(4), "completions": int64(10)}, wantMin: 4},
		{name: "remaining work below parallelism", spec: map[string]any{"parallelism": int64(4), "completions": int64(10)},
			status: map[string]any{"succeeded": int64(8)}, wantMin: 2},
		{name: "remaining work at least 1", spec: map[string]any{"parallelism": int64(4), "completions": int64(10)},
			status: map[string]any{"succeeded": int64(12)}, wantMin: 1},
		{name: "work queue Job without completions", spec: map[string]any{"parallelism": int64(3)},
			status: map[string]any{"succeeded": int64(1)}, wantMin: 3},
		{name: "indexed", spec: map[string]any{"parallelism": int64(2), "completions": int64(2), "completionMode": "Indexed"}, wantMin: 2},
		{name: "indexed of one pod at a time is a gang of 1", spec: map[string]any{"completions": int64(5), "completionMode": "Indexed"}, wantMin: 1},
		{name: "not indexed, one at a time: independent", spec: map[string]any{"completions": int64(5)}, wantMin: 1, independent: true},
		{name: "defaults: independent", spec: map[string]any{}, wantMin: 1, independent: true},
		{name: "no spec at all", wantMin: 1, independent: true},
		{name: "parallelism 0", spec: map[string]any{"parallelism": int64(0)}, wantErr: "runs no pods at once (spec.parallelism is 0)"},
		{name: "completions 0", spec: map[string]any{"completions": int64(0)}, wantErr: "spec.completions is 0"},
		{name: "negative parallelism", spec: map[string]any{"parallelism": int64(-2)}, wantErr: "spec.parallelism is negative (-2)"},
		{name: "huge parallelism", spec: map[string]any{"parallelism": int64(1 << 40)}, wantErr: "spec.parallelism is too large (1099511627776; at most 2147483647)"},
		{name: "parallelism as a string", spec: map[string]any{"parallelism": "4"}, wantErr: "spec.parallelism is a string, not an integer"},
		{name: "fractional parallelism", spec: map[string]any{"parallelism": 2.5}, wantErr: "spec.parallelism is 2.5, not an integer"},
		{name: "integral float", spec: map[string]any{"parallelism": 3.0, "completionMode": "Indexed", "completions": int64(9)}, wantMin: 3},
		{name: "succeeded as a list", spec: map[string]any{"parallelism": int64(2)}, status: map[string]any{"succeeded": []any{}},
			wantErr: "status.succeeded is a list, not an integer"},
		{name: "completionMode not a string", spec: map[string]any{"completionMode": true}, wantErr: "spec.completionMode is a boolean, not a string"},
	})
	// Without inference only a Job that opts in has a policy.
	if p := jobPolicy(false)(object("Job", map[string]any{"parallelism": int64(2)}, nil)); p != nil {
		t.Errorf("a Job that does not opt in has a policy without inference: %+v", p)
	}
	bad := object("Job", nil, nil)
	bad.Object["spec"] = "nonsense"
	if p := jobPolicy(true)(bad); p == nil || p.Err == nil || !strings.Contains(p.Err.Error(), "spec is a string, not an object") {
		t.Errorf("policy of a Job whose spec is a string: %+v", p)
	}
}

func TestRayClusterPolicy(t *testing.T) {
	group := func(kv ...any) map[string]any {
		m := map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{}}}}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	runPolicyCases(t, "RayCluster", rayClusterPolicy, rayClusterFields, []policyCase{
		{name: "head only", spec: map[string]any{}, wantMin: 1},
		{name: "head and minReplicas", spec: map[string]any{"workerGroupSpecs": []any{
			group("minReplicas", int64(2), "maxReplicas", int64(10), "replicas", int64(5)), group("minReplicas", int64(3))}}, wantMin: 6},
		{name: "suspended group skipped", spec: map[string]any{"workerGroupSpecs": []any{
			group("minReplicas", int64(2)), group("minReplicas", int64(3), "suspend", true)}}, wantMin: 3},
		{name: "multi-host replicas", spec: map[string]any{"workerGroupSpecs": []any{
			group("minReplicas", int64(2), "numOfHosts", int64(4))}}, wantMin: 9},
		{name: "minReplicas absent is 0", spec: map[string]any{"workerGroupSpecs": []any{group()}}, wantMin: 1},
		{name: "negative minReplicas", spec: map[string]any{"workerGroupSpecs": []any{group(), group("minReplicas", int64(-1))}},
			wantErr: "spec.workerGroupSpecs[1].minReplicas is negative (-1)"},
		{name: "minReplicas as a string", spec: map[string]any{"workerGroupSpecs": []any{group("minReplicas", "two")}},
			wantErr: "spec.workerGroupSpecs[0].minReplicas is a string, not an integer"},
		{name: "suspend as a string", spec: map[string]any{"workerGroupSpecs": []any{group("suspend", "yes")}},
			wantErr: "spec.workerGroupSpecs[0].suspend is a string, not true or false"},
		{name: "groups not a list", spec: map[string]any{"workerGroupSpecs": map[string]any{}}, wantErr: "spec.workerGroupSpecs is an object, not a list"},
		{name: "group not an object", spec: map[string]any{"workerGroupSpecs": []any{"x"}}, wantErr: "spec.workerGroupSpecs[0] is a string, not an object"},
		{name: "sum too large", spec: map[string]any{"workerGroupSpecs": []any{
			group("minReplicas", int64(2147483647), "numOfHosts", int64(2147483647))}}, wantErr: "is too large"},
	})
}

func TestJobSetPolicy(t *testing.T) {
	rj := func(name string, replicas any, parallelism, completions any) map[string]any {
		spec := map[string]any{"template": map[string]any{"spec": map[string]any{}}}
		if parallelism != nil {
			spec["parallelism"] = parallelism
		}
		if completions != nil {
			spec["completions"] = completions
		}
		m := map[string]any{"name": name, "template": map[string]any{"spec": spec}}
		if replicas != nil {
			m["replicas"] = replicas
		}
		return m
	}
	runPolicyCases(t, "JobSet", jobSetPolicy, jobSetFields, []policyCase{
		{name: "driver and workers", spec: map[string]any{"replicatedJobs": []any{
			rj("driver", nil, nil, nil), rj("workers", int64(2), int64(4), int64(4))}}, wantMin: 9},
		{name: "completions below parallelism", spec: map[string]any{"replicatedJobs": []any{
			rj("w", int64(3), int64(4), int64(2))}}, wantMin: 6},
		{name: "succeeded Jobs no longer count", spec: map[string]any{"replicatedJobs": []any{
			rj("driver", nil, nil, nil), rj("workers", int64(2), int64(4), nil)}},
			status: map[string]any{"replicatedJobsStatus": []any{map[string]any{"name": "driver", "succeeded": int64(1)}}}, wantMin: 8},
		{name: "everything succeeded: at least 1", spec: map[string]any{"replicatedJobs": []any{rj("w", int64(2), nil, nil)}},
			status: map[string]any{"replicatedJobsStatus": []any{map[string]any{"name": "w", "succeeded": int64(2)}}}, wantMin: 1},
		{name: "in order: the first replicated job", spec: map[string]any{"startupPolicy": map[string]any{"startupPolicyOrder": "InOrder"},
			"replicatedJobs": []any{rj("driver", nil, nil, nil), rj("workers", int64(2), int64(4), nil)}}, wantMin: 1},
		{name: "no replicated jobs", spec: map[string]any{}, wantErr: "runs no pods"},
		{name: "zero replicas", spec: map[string]any{"replicatedJobs": []any{rj("w", int64(0), nil, nil)}}, wantErr: "runs no pods"},
		{name: "replicas as a string", spec: map[string]any{"replicatedJobs": []any{rj("w", "2", nil, nil)}},
			wantErr: "spec.replicatedJobs[0].replicas is a string, not an integer"},
		{name: "negative parallelism", spec: map[string]any{"replicatedJobs": []any{rj("w", nil, int64(-1), nil)}},
			wantErr: "spec.replicatedJobs[0].template.spec.parallelism is negative"},
		{name: "status not a list", spec: map[string]any{"replicatedJobs": []any{rj("w", nil, nil, nil)}},
			status: map[string]any{"replicatedJobsStatus": "x"}, wantErr: "status.replicatedJobsStatus is a string, not a list"},
		{name: "huge", spec: map[string]any{"replicatedJobs": []any{rj("a", int64(2147483647), int64(2), nil)}}, wantErr: "too large"},
	})
}

func TestLeaderWorkerSetPolicy(t *testing.T) {
	runPolicyCases(t, "LeaderWorkerSet", leaderWorkerSetPolicy, leaderWorkerSetFields, []policyCase{
		{name: "size", spec: map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(4)}}, wantMin: 4},
		{name: "default size", spec: map[string]any{}, wantMin: 1},
		{name: "leader ready: the leader alone", spec: map[string]any{"startupPolicy": "LeaderReady",
			"leaderWorkerTemplate": map[string]any{"size": int64(4)}}, wantMin: 1},
		{name: "size 0", spec: map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(0)}}, wantErr: "spec.leaderWorkerTemplate.size is 0"},
		{name: "size as a string", spec: map[string]any{"leaderWorkerTemplate": map[string]any{"size": "4"}},
			wantErr: "spec.leaderWorkerTemplate.size is a string, not an integer"},
		{name: "template not an object", spec: map[string]any{"leaderWorkerTemplate": []any{}},
			wantErr: "spec.leaderWorkerTemplate is a list, not an object"},
		{name: "huge size", spec: map[string]any{"leaderWorkerTemplate": map[string]any{"size": int64(1) << 33}}, wantErr: "too large"},
	})
}

func TestKubeflowPolicies(t *testing.T) {
	spec := func(specs string, replicas map[string]any, extra ...any) map[string]any {
		m := map[string]any{}
		for t, r := range replicas {
			rs := map[string]any{"template": map[string]any{}}
			if r != nil {
				rs["replicas"] = r
			}
			m[t] = rs
		}
		s := map[string]any{specs: m}
		for i := 0; i+1 < len(extra); i += 2 {
			s[extra[i].(string)] = extra[i+1]
		}
		return s
	}
	minAvailable := func(n any) map[string]any {
		return map[string]any{"schedulingPolicy": map[string]any{"minAvailable": n}}
	}
	runPolicyCases(t, "MPIJob", mpiJobPolicy, mpiJobFields, []policyCase{
		{name: "launcher and workers", spec: spec("mpiReplicaSpecs", map[string]any{"Launcher": int64(1), "Worker": int64(4)}), wantMin: 5},
		{name: "defaults: launcher 1, workers 0", spec: spec("mpiReplicaSpecs", map[string]any{"Launcher": nil, "Worker": nil}), wantMin: 1},
		{name: "launcher waits for the workers", spec: spec("mpiReplicaSpecs", map[string]any{"Launcher": nil, "Worker": int64(3)},
			"launcherCreationPolicy", "WaitForWorkersReady"), wantMin: 3},
		{name: "minAvailable", spec: spec("mpiReplicaSpecs", map[string]any{"Launcher": nil, "Worker": int64(8)},
			"runPolicy", minAvailable(int64(5))), wantMin: 5},
		{name: "minAvailable 0", spec: spec("mpiReplicaSpecs", map[string]any{"Worker": int64(8)}, "runPolicy", minAvailable(int64(0))),
			wantErr: "spec.runPolicy.schedulingPolicy.minAvailable is 0"},
		{name: "minAvailable as a string", spec: spec("mpiReplicaSpecs", map[string]any{"Worker": int64(8)}, "runPolicy", minAvailable("5")),
			wantErr: "spec.runPolicy.schedulingPolicy.minAvailable is a string, not an integer"},
		{name: "negative replicas", spec: spec("mpiReplicaSpecs", map[string]any{"Worker": int64(-3)}),
			wantErr: "spec.mpiReplicaSpecs.Worker.replicas is negative (-3)"},
		{name: "no replica specs", spec: map[string]any{}, wantErr: "runs no pods (spec.mpiReplicaSpecs asks for none)"},
		{name: "replica spec not an object", spec: map[string]any{"mpiReplicaSpecs": map[string]any{"Worker": int64(2)}},
			wantErr: "spec.mpiReplicaSpecs.Worker is a number, not an object"},
	})
	runPolicyCases(t, "PyTorchJob", pyTorchJobPolicy, pyTorchJobFields, []policyCase{
		{name: "master and workers", spec: spec("pytorchReplicaSpecs", map[string]any{"Master": int64(1), "Worker": int64(3)}), wantMin: 4},
		{name: "default replicas 1 each", spec: spec("pytorchReplicaSpecs", map[string]any{"Master": nil, "Worker": nil}), wantMin: 2},
		{name: "minAvailable", spec: spec("pytorchReplicaSpecs", map[string]any{"Worker": int64(10)}, "runPolicy", minAvailable(int64(2))), wantMin: 2},
		{name: "replicas too large", spec: spec("pytorchReplicaSpecs", map[string]any{"Master": int64(2147483647), "Worker": int64(2147483647)}),
			wantErr: "too large"},
		{name: "specs not an object", spec: map[string]any{"pytorchReplicaSpecs": []any{}}, wantErr: "spec.pytorchReplicaSpecs is a list, not an object"},
	})
}

// The slim transform keeps what the policies read and drops the pod
// templates; it accepts tombstones and objects that are not unstructured,
// and running it twice changes nothing.
func TestSlimmer(t *testing.T) {
	u := object("RayCluster", map[string]any{
		"headGroupSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{"big"}}}},
		"workerGroupSpecs": []any{
			map[string]any{"groupName": "g", "minReplicas": int64(2), "template": map[string]any{"spec": map[string]any{}}},
			"not an object",
		},
	}, map[string]any{"state": "ready"})
	u.SetLabels(map[string]string{"a": "b"})
	u.SetResourceVersion("7")
	transform := Slimmer(rayClusterFields...)
	out, err := transform(u)
	if err != nil {
		t.Fatal(err)
	}
	s := out.(*unstructured.Unstructured)
	want := map[string]any{"workerGroupSpecs": []any{map[string]any{"minReplicas": int64(2)}, "not an object"}}
	if got := s.Object["spec"]; !equalJSON(got, want) {
		t.Errorf("slim spec %v, want %v", got, want)
	}
	if s.GetLabels() != nil || s.Object["status"] != nil || s.GetResourceVersion() != "7" || s.GetName() != "o" || s.GetKind() != "RayCluster" {
		t.Errorf("slim object %v", s.Object)
	}
	again, err := transform(s)
	if err != nil || !equalJSON(again.(*unstructured.Unstructured).Object, s.Object) {
		t.Errorf("slimming twice changed the object: %v", again)
	}
	tomb, err := transform(toolscache.DeletedFinalStateUnknown{Key: "ns/o", Obj: u})
	if err != nil {
		t.Fatal(err)
	}
	if inner := tomb.(toolscache.DeletedFinalStateUnknown).Obj.(*unstructured.Unstructured); inner.Object["status"] != nil {
		t.Errorf("tombstone not slimmed: %v", inner.Object)
	}
	if out, err := transform("not an object"); err != nil || out != "not an object" {
		t.Errorf("transform of a string: %v %v", out, err)
	}
}

func equalJSON(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !equalJSON(x[k], y[k]) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
