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

package resourcemanager_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// vm is what a (pretend) VM manager knows about one of its VMs.
type vm struct {
	host        string
	cpu, memory string
	running     bool
}

// publish makes the store hold one ExternalWorkload per VM, as the VMs
// are now: it deletes the workloads of VMs that are gone, and creates or
// updates the others. Objects that did not change are left alone, so that
// they keep their resourceVersion and watchers get no event for them. A
// manager calls it after every change it makes, or on a timer.
func publish(store *resourcemanager.Store, vms map[string]vm) error {
	current, _ := store.List("")
	for _, o := range current {
		w := o.(*v1alpha1.ExternalWorkload)
		if _, ok := vms[w.Name]; !ok {
			if err := store.Delete("", w.Name); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(vms))
	for name := range vms {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := vms[name]
		want := &v1alpha1.ExternalWorkload{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ExternalWorkloadSpec{
				NodeName:     v.host,
				WorkloadKind: "vm",
				Resources: v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse(v.cpu),
					v1.ResourceMemory: resource.MustParse(v.memory),
				},
			},
			Status: v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning},
		}
		if !v.running {
			want.Status.Phase = v1alpha1.ExternalWorkloadStopped
		}
		if errs := v1alpha1.ValidateExternalWorkload(want); len(errs) > 0 {
			return errs.ToAggregate()
		}
		old, ok := store.Get("", name)
		switch {
		case !ok:
			if err := store.Create(want); err != nil {
				return err
			}
		case !equality.Semantic.DeepEqual(old.(*v1alpha1.ExternalWorkload).Spec, want.Spec) ||
			old.(*v1alpha1.ExternalWorkload).Status != want.Status:
			// want has no resourceVersion: the update is unconditional.
			if err := store.Update(want); err != nil {
				return err
			}
		}
	}
	return nil
}

// A VM manager publishes its VMs as ExternalWorkloads for batch-scheduler's
// http custom informer source.
func Example() {
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource,
		Example:          &v1alpha1.ExternalWorkload{},
		// Must be above every resourceVersion an earlier run of the
		// manager served. A real manager uses the start time, e.g.
		// time.Now().UnixMicro(); a fixed number keeps the output stable.
		InitialResourceVersion: 1000,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	// A real manager serves with http.ListenAndServeTLS(":8443", cert,
	// key, store.Handler()).
	srv := httptest.NewServer(store.Handler())
	defer srv.Close()

	// Two VMs start; then vm-2 goes away and vm-1 grows.
	if err := publish(store, map[string]vm{
		"vm-1": {host: "node-a", cpu: "4", memory: "8Gi", running: true},
		"vm-2": {host: "node-b", cpu: "2", memory: "4Gi", running: true},
	}); err != nil {
		fmt.Println(err)
		return
	}
	if err := publish(store, map[string]vm{
		"vm-1": {host: "node-a", cpu: "6", memory: "8Gi", running: true},
	}); err != nil {
		fmt.Println(err)
		return
	}

	// What the scheduler's list request gets.
	resp, err := http.Get(srv.URL + store.Path())
	if err != nil {
		fmt.Println(err)
		return
	}
	var list v1alpha1.ExternalWorkloadList
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("GET", store.Path())
	fmt.Println("list resourceVersion", list.ResourceVersion)
	for _, w := range list.Items {
		fmt.Printf("  %s resourceVersion %s on %s, cpu %s\n", w.Name, w.ResourceVersion, w.Spec.NodeName, w.Spec.Resources.Cpu())
	}

	// A watch resumed from resourceVersion 1002 replays what came after.
	resp, err = http.Get(srv.URL + store.Path() + "?watch=true&resourceVersion=1002")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println("watch from 1002")
	lines := bufio.NewScanner(resp.Body)
	for range 2 {
		if !lines.Scan() {
			fmt.Println(lines.Err())
			return
		}
		var e struct {
			Type   string                    `json:"type"`
			Object v1alpha1.ExternalWorkload `json:"object"`
		}
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("  %s %s resourceVersion %s\n", e.Type, e.Object.Name, e.Object.ResourceVersion)
	}

	// Output:
	// GET /apis/batch-scheduler.io/v1alpha1/externalworkloads
	// list resourceVersion 1004
	//   vm-1 resourceVersion 1004 on node-a, cpu 6
	// watch from 1002
	//   DELETED vm-2 resourceVersion 1003
	//   MODIFIED vm-1 resourceVersion 1004
}
