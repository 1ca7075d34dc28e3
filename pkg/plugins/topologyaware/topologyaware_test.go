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

package topologyaware

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

type res = map[v1.ResourceName]string

// cluster builds nodes of 1 cpu: racks maps rack name to its block and
// node count.
func cluster(racks map[string][2]string) []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for rack, bn := range racks {
		var n int
		fmt.Sscan(bn[1], &n)
		for i := range n {
			name := fmt.Sprintf("%s-%d", rack, i)
			out = append(out, framework.NewNodeInfo(st.MakeNode().Name(name).Label(RackLabel, rack).Label(BlockLabel, bn[0]).
				Label(HostnameLabel, name).Capacity(res{v1.ResourceCPU: "1", v1.ResourcePods: "110"}).Obj()))
		}
	}
	return out
}

func gangJob(n int, t *framework.TopologyConstraint) *framework.Job {
	job := &framework.Job{ID: framework.JobID{Namespace: "ns", Name: "g", Gang: true}, MinAvailable: int32(n), Topology: t}
	for i := range n {
		job.Pending = append(job.Pending, st.MakePod().Name(fmt.Sprintf("g-%d", i)).Req(res{v1.ResourceCPU: "1"}).Obj())
	}
	return job
}

func newPlugin(t testing.TB, args string) *TopologyAware {
	t.Helper()
	var r *config.RawArgs
	if args != "" {
		r = config.NewRawArgs("test", []byte(args))
	}
	var p framework.Plugin
	var err error
	if r == nil {
		p, err = New(context.Background(), nil, nil)
	} else {
		p, err = New(context.Background(), r, nil)
	}
	if err != nil {
		t.Fatalf("New(%q): %v", args, err)
	}
	return p.(*TopologyAware)
}

func names(plan *framework.PlacementPlan) []string {
	var out []string
	for _, p := range plan.Placements {
		out = append(out, p.Name)
	}
	return out
}

func TestPlacementsOrder(t *testing.T) {
	nodes := cluster(map[string][2]string{"r1": {"b1", "4"}, "r2": {"b1", "6"}, "r3": {"b2", "5"}, "r4": {"b2", "2"}})
	tests := []struct {
		name     string
		args     string
		c        framework.TopologyConstraint
		size     int
		want     []string
		anywhere bool
	}{
		{name: "required rack, best fit first", c: framework.TopologyConstraint{Key: RackLabel, Required: true}, size: 4,
			want: []string{RackLabel + "=r1", RackLabel + "=r3", RackLabel + "=r2"}},
		{name: "required block tries its racks first", c: framework.TopologyConstraint{Key: BlockLabel, Required: true}, size: 5,
			want: []string{RackLabel + "=r3", RackLabel + "=r2", BlockLabel + "=b2", BlockLabel + "=b1"}},
		{name: "narrower levels off", args: "maxNarrowerPlacements: -1", c: framework.TopologyConstraint{Key: BlockLabel, Required: true}, size: 5,
			want: []string{BlockLabel + "=b2", BlockLabel + "=b1"}},
		{name: "maxPlacements bounds the own level", args: "maxPlacements: 1", c: framework.TopologyConstraint{Key: RackLabel, Required: true}, size: 4,
			want: []string{RackLabel + "=r1"}},
		{name: "preferred rack widens to blocks, then anywhere", c: framework.TopologyConstraint{Key: RackLabel}, size: 7,
			want: []string{BlockLabel + "=b2", BlockLabel + "=b1"}, anywhere: true},
		{name: "volcano tier 1 is the rack", c: framework.TopologyConstraint{Tier: 1, Required: true}, size: 6,
			want: []string{RackLabel + "=r2"}},
		{name: "volcano tier 2 is the block", c: framework.TopologyConstraint{Tier: 2, Required: true}, size: 7,
			want: []string{BlockLabel + "=b2", BlockLabel + "=b1"}},
		{name: "a tier above every level is no constraint", c: framework.TopologyConstraint{Tier: 3, Required: true}, size: 20,
			anywhere: true},
		{name: "a label that is not a level", c: framework.TopologyConstraint{Key: "example.com/pod", Required: true}, size: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t, tt.args)
			plan, st := pl.Placements(context.Background(), nil, gangJob(tt.size, &tt.c), nodes)
			if !st.IsSuccess() {
				t.Fatalf("Placements: %v", st.AsError())
			}
			if got := names(plan); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("placements %v, want %v", got, tt.want)
			}
			if plan.Anywhere != tt.anywhere {
				t.Errorf("Anywhere = %v, want %v", plan.Anywhere, tt.anywhere)
			}
		})
	}
}

func TestPlacementsStayWhereTheGangRuns(t *testing.T) {
	nodes := cluster(map[string][2]string{"r1": {"b1", "4"}, "r2": {"b1", "6"}})
	job := gangJob(3, &framework.TopologyConstraint{Key: RackLabel, Required: true, Source: "test"})
	job.MinAvailable, job.Bound, job.PlacedNodes = 4, 1, []string{"r2-0"}
	plan, st := newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if !st.IsSuccess() {
		t.Fatal(st.AsError())
	}
	if got := names(plan); len(got) != 1 || got[0] != RackLabel+"=r2" {
		t.Fatalf("placements %v; a gang already running in r2 must stay there", got)
	}

	job.PlacedNodes = []string{"r1-0", "r2-0"}
	plan, _ = newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if len(plan.Placements) != 0 || !strings.Contains(plan.Unplaced, "its running pods are not within one such domain") {
		t.Fatalf("plan %+v for a gang running in two racks; want none, saying why", plan)
	}
}

func TestPlacementsUnplacedNamesTheLargestFreeDomain(t *testing.T) {
	nodes := cluster(map[string][2]string{"r1": {"b1", "4"}, "r2": {"b1", "3"}})
	job := gangJob(5, &framework.TopologyConstraint{Key: RackLabel, Required: true, Source: "PodGroup ns/g"})
	plan, _ := newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if len(plan.Placements) != 0 {
		t.Fatalf("placements %v for a gang larger than every rack", names(plan))
	}
	want := "gang ns/g must run within one topology.kubernetes.io/rack domain (PodGroup ns/g): its quorum needs cpu 5, pods 5; the largest free, topology.kubernetes.io/rack=r1, has cpu 4, pods 440 free"
	if plan.Unplaced != want {
		t.Errorf("Unplaced = %q\nwant        %q", plan.Unplaced, want)
	}
	if len(plan.Room) != 0 {
		t.Errorf("Room %v: no rack could hold the gang even empty", plan.Room)
	}

	nodes = cluster(map[string][2]string{"r1": {"b1", "2"}})
	job = gangJob(2, &framework.TopologyConstraint{Key: "example.com/none", Required: true, Source: "s"})
	plan, _ = newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if !strings.HasSuffix(plan.Unplaced, ": no node has label example.com/none") {
		t.Errorf("Unplaced = %q; want it to say no node has the label", plan.Unplaced)
	}
}

func TestPlacementsRoomForPreemption(t *testing.T) {
	nodes := cluster(map[string][2]string{"r1": {"b1", "4"}, "r2": {"b1", "6"}, "r3": {"b1", "2"}})
	for _, n := range nodes[:] {
		n.AddPod(st.MakePod().Name("busy-" + n.Name()).Node(n.Name()).Req(res{v1.ResourceCPU: "1"}).Obj())
	}
	plan, _ := newPlugin(t, "").Placements(context.Background(), nil, gangJob(4, &framework.TopologyConstraint{Key: RackLabel, Required: true}), nodes)
	var room []string
	for _, p := range plan.Room {
		room = append(room, p.Name)
	}
	// Both r1 and r2 could hold 4 pods once emptied; r3 never could.
	if strings.Join(room, ",") != RackLabel+"=r1,"+RackLabel+"=r2" {
		t.Errorf("Room %v, want r1 and r2", room)
	}
}

func TestPlacementsSkipAndErrors(t *testing.T) {
	pl := newPlugin(t, "")
	nodes := cluster(map[string][2]string{"r1": {"b1", "2"}})
	if _, st := pl.Placements(context.Background(), nil, gangJob(2, nil), nodes); !st.IsSkip() {
		t.Errorf("no constraint: status %v, want Skip", st)
	}
	single := gangJob(1, &framework.TopologyConstraint{Key: RackLabel, Required: true})
	single.ID.Gang = false
	if _, st := pl.Placements(context.Background(), nil, single, nodes); !st.IsSkip() {
		t.Errorf("single pod: status %v, want Skip", st)
	}
	bad := gangJob(2, nil)
	bad.TopologyErr = fmt.Errorf("annotation x is bad")
	if _, st := pl.Placements(context.Background(), nil, bad, nodes); st.Code() != framework.UnschedulableAndUnresolvable || st.Message() != "annotation x is bad" {
		t.Errorf("bad constraint: status %v, want UnschedulableAndUnresolvable with the error", st)
	}
}

func TestArgs(t *testing.T) {
	for _, tt := range []struct{ args, wantErr string }{
		{"levels: [a.example.com/x, a.example.com/x]", `levels[1] "a.example.com/x" is listed twice`},
		{"levels: ['bad key!']", `levels[0] "bad key!" is not a node label key`},
		{"maxPlacements: -2", "maxPlacements -2 must be at least 1"},
		{"maxNarrowerPlacements: -3", "maxNarrowerPlacements -3 must be -1 (none) or more"},
		{"level: [x]", "level"},
	} {
		_, err := New(context.Background(), config.NewRawArgs("test", []byte(tt.args)), nil)
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), Name+" args") {
			t.Errorf("New(%q) error = %v, want one naming %s args and %q", tt.args, err, Name, tt.wantErr)
		}
	}
	pl := newPlugin(t, "levels: [example.com/block, example.com/rack]")
	if got := strings.Join(pl.narrowFirst, ","); got != "example.com/rack,example.com/block" {
		t.Errorf("tiers %s, want the rack then the block", got)
	}
}

// The defaults are the API's, and valid.
func TestDefaultArgs(t *testing.T) {
	a := DefaultArgs()
	if !slices.Equal(a.Levels, []string{BlockLabel, RackLabel, HostnameLabel}) || a.MaxPlacements != DefaultMaxPlacements || a.MaxNarrowerPlacements != DefaultMaxNarrowerPlacements {
		t.Errorf("DefaultArgs() = %+v", a)
	}
}

// A gang asking for an extended resource that no node lists (one a
// DeviceClass maps, served through Dynamic Resource Allocation) is sized
// by its other resources: DynamicResources judges the devices in Filter.
// A resource some node lists still sizes the domains.
func TestPlacementsLeaveUnlistedResourcesToFilter(t *testing.T) {
	const gpu v1.ResourceName = "example.com/gpu"
	job := gangJob(3, &framework.TopologyConstraint{Key: RackLabel, Required: true, Source: "test"})
	for i, p := range job.Pending {
		job.Pending[i] = st.MakePod().Name(p.Name).Req(res{v1.ResourceCPU: "1", gpu: "1"}).Obj()
	}
	nodes := cluster(map[string][2]string{"r1": {"b1", "4"}, "r2": {"b1", "3"}})
	plan, s := newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if !s.IsSuccess() {
		t.Fatal(s.AsError())
	}
	got := names(plan)
	slices.Sort(got)
	if want := []string{RackLabel + "=r1", RackLabel + "=r2"}; !slices.Equal(got, want) {
		t.Fatalf("placements %v with %s listed on no node; want %v, the racks whose cpu holds the quorum", got, gpu, want)
	}

	// r2's nodes list two each (a device plugin), r1's none: the GPUs
	// size the racks, and only r2 holds the quorum's.
	for _, n := range nodes {
		if strings.HasPrefix(n.Node.Name, "r2-") {
			node := n.Node.DeepCopy()
			node.Status.Allocatable[gpu] = resource.MustParse("2")
			node.Status.Capacity[gpu] = resource.MustParse("2")
			n.SetNode(node)
		}
	}
	plan, _ = newPlugin(t, "").Placements(context.Background(), nil, job, nodes)
	if got := names(plan); !slices.Equal(got, []string{RackLabel + "=r2"}) {
		t.Fatalf("placements %v with %s listed on r2's nodes; want only r2", got, gpu)
	}
}
