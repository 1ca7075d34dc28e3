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

package plugins

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/internal/testutil"
)

func TestNewInTreeRegistry(t *testing.T) {
	r := NewInTreeRegistry()
	want := []string{"Capacity", "DefaultBinder", "DefaultPreemption", "DynamicResources", "Gang", "InterPodAffinity", "NodeAffinity", "NodeLedger", "NodePorts", "NodeResourcesFit", "NodeUnschedulable", "NodeVolumeLimits", "PodTopologySpread", "PrioritySort", "Reclaim", "Reservation", "TaintToleration", "TopologyAware", "VolumeBinding", "VolumeRestrictions", "VolumeZone"}
	if got := r.Names(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Names = %v, want %v", got, want)
	}
	h := testutil.NewHandle()
	// The args a plugin cannot do without.
	required := map[string]string{"NodeLedger": "nodeSelector: shared=vms"}
	for _, name := range want {
		f, err := r.Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		var args runtime.Object
		if a, ok := required[name]; ok {
			args = configapi.NewRawArgs("", []byte(a))
		}
		p, err := f(t.Context(), args, h)
		if err != nil {
			t.Errorf("factory of %s without args: %v", name, err)
			continue
		}
		if p.Name() != name {
			t.Errorf("the factory registered as %s builds %s", name, p.Name())
		}
		if _, ok := p.(framework.EnqueueExtensions); !ok {
			t.Errorf("%s does not implement EnqueueExtensions, so it would be assumed to need every event", name)
		}
		if _, err := f(t.Context(), configapi.NewRawArgs("", []byte("bogusField: 1")), h); err == nil || !strings.Contains(err.Error(), name+" args") {
			t.Errorf("%s accepted an unknown arg: %v", name, err)
		}
	}
	// Each call returns a registry of its own.
	if err := r.Register("Extra", r2Factory); err != nil {
		t.Fatal(err)
	}
	if NewInTreeRegistry().Has("Extra") {
		t.Error("registries share state")
	}
}

func TestMustRegisterPanics(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"Gang"`) {
			t.Errorf("recovered %v, want a panic naming the duplicate", r)
		}
	}()
	mustRegister(NewInTreeRegistry(), []namedFactory{{"Gang", r2Factory}})
}

func r2Factory(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return nil, nil
}

func TestDefaultProfile(t *testing.T) {
	p := DefaultProfile("batch-scheduler")
	if p.SchedulerName != "batch-scheduler" {
		t.Errorf("SchedulerName = %q", p.SchedulerName)
	}
	ref := func(names ...string) frameworkruntime.PluginSet {
		var s frameworkruntime.PluginSet
		for _, n := range names {
			s = append(s, frameworkruntime.PluginRef{Name: n})
		}
		return s
	}
	want := map[frameworkruntime.ExtensionPoint]frameworkruntime.PluginSet{
		frameworkruntime.QueueSortPoint: ref("PrioritySort"),
		frameworkruntime.PreFilterPoint: ref("Gang", "Capacity", "NodeAffinity", "NodePorts", "NodeResourcesFit",
			"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources", "TopologyAware"),
		frameworkruntime.FilterPoint: ref("NodeUnschedulable", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
			"VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources"),
		frameworkruntime.PreScorePoint:   ref("PodTopologySpread", "InterPodAffinity"),
		frameworkruntime.ScorePoint:      {{Name: "NodeResourcesFit", Weight: 1}, {Name: "NodeAffinity", Weight: 1}, {Name: "TaintToleration", Weight: 1}, {Name: "InterPodAffinity", Weight: 1}, {Name: "PodTopologySpread", Weight: 1}},
		frameworkruntime.ReservePoint:    ref("Capacity", "VolumeBinding", "DynamicResources"),
		frameworkruntime.PermitPoint:     ref("Gang"),
		frameworkruntime.PostFilterPoint: ref("Reservation", "Reclaim", "DefaultPreemption"),
		frameworkruntime.BindPoint:       ref("VolumeBinding", "DynamicResources", "DefaultBinder"),
	}
	if !reflect.DeepEqual(p.Plugins, want) {
		t.Errorf("Plugins = %v, want %v", p.Plugins, want)
	}
	if len(p.PluginArgs) != 0 {
		t.Errorf("PluginArgs = %v, want none", p.PluginArgs)
	}

	// Every plugin implements the interface of every point it is listed
	// at.
	r := NewInTreeRegistry()
	h := testutil.NewHandle()
	for point, set := range p.Plugins {
		for _, ref := range set {
			f, err := r.Lookup(ref.Name)
			if err != nil {
				t.Fatalf("%s: %v", point, err)
			}
			pl, err := f(context.Background(), nil, h)
			if err != nil {
				t.Fatal(err)
			}
			if !implements(point, pl) {
				t.Errorf("%s is listed at %s but does not implement it", ref.Name, point)
			}
		}
	}

	// The result is fresh.
	p.Plugins[frameworkruntime.FilterPoint][0].Name = "Changed"
	if DefaultProfile("x").Plugins[frameworkruntime.FilterPoint][0].Name != "NodeUnschedulable" {
		t.Error("DefaultProfile results share their lists")
	}
}

func implements(point frameworkruntime.ExtensionPoint, p framework.Plugin) bool {
	var ok bool
	switch point {
	case frameworkruntime.QueueSortPoint:
		_, ok = p.(framework.QueueSortPlugin)
	case frameworkruntime.PreFilterPoint:
		_, perJob := p.(framework.PreFilterPlugin)
		_, perPod := p.(framework.PodPreFilterPlugin)
		_, place := p.(framework.PlacementPlugin)
		ok = perJob || perPod || place
	case frameworkruntime.FilterPoint:
		_, ok = p.(framework.FilterPlugin)
	case frameworkruntime.PreScorePoint:
		_, ok = p.(framework.PreScorePlugin)
	case frameworkruntime.ScorePoint:
		_, ok = p.(framework.ScorePlugin)
	case frameworkruntime.ReservePoint:
		_, ok = p.(framework.ReservePlugin)
	case frameworkruntime.PermitPoint:
		_, ok = p.(framework.PermitPlugin)
	case frameworkruntime.PostFilterPoint:
		_, ok = p.(framework.PostFilterPlugin)
	case frameworkruntime.BindPoint:
		_, ok = p.(framework.BindPlugin)
	}
	return ok
}
