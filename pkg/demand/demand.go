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

package demand

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

// Path is where batch-scheduler serves its Report.
const Path = "/demand"

// MaxReportBytes bounds the body Fetch reads: a report names each node at
// most once, so even 5,000 nodes stay far below it.
const MaxReportBytes = 16 << 20

// Report is a framework's demand at one moment.
type Report struct {
	// Framework is the name the framework is known by to the allocator
	// (the two-level handler's framework setting); empty when the
	// framework has none.
	Framework string `json:"framework,omitempty"`
	// Time is when the report was made.
	Time metav1.Time `json:"time"`
	// Unmet is the sum of the requests of the pods (or VMs) the framework
	// could not place and that wait for capacity.
	Unmet v1.ResourceList `json:"unmet,omitempty"`
	// Waiting counts what waits: pods for batch-scheduler, VMs for the VM
	// manager.
	Waiting int `json:"waiting"`
	// LargestUnit is, per resource, the most any single waiting pod (or
	// VM) asks for. Capacity granted in pieces smaller than this on every
	// node helps nobody.
	LargestUnit v1.ResourceList `json:"largestUnit,omitempty"`
	// LargestGang is the largest waiting gang by total requests; nil when
	// nothing waits.
	LargestGang *Gang `json:"largestGang,omitempty"`
	// Used is what the framework's placed work requests, per node name.
	// Nodes where it uses nothing are left out.
	Used map[string]v1.ResourceList `json:"used,omitempty"`
	// Synced is true once the framework's view is complete: its informers
	// (pods, grants, its own workloads) have synced, so that Used is all it
	// uses and ObservedGrants all it has applied. An allocator learns
	// nothing from a report that is not synced: it neither frees capacity
	// on its Used nor takes its ObservedGrants as acknowledged.
	Synced bool `json:"synced,omitempty"`
	// ObservedGrants maps the name of each grant the framework has applied
	// to the resourceVersion it applied. It acknowledges those versions:
	// Used counts every placement the framework made or is making under
	// any version it applied, and from the time of the report on it places
	// only within these versions of its grants or later ones. An allocator
	// may give capacity a grant gave up to another framework only once the
	// version that gave it up is acknowledged and Used says it is not in
	// use (see docs/two-level.md).
	ObservedGrants map[string]string `json:"observedGrants,omitempty"`
	// Queues is, per queue of the framework's tenants (docs/queues.md),
	// what it uses, waits for and may use, sorted by name: which tenant
	// is hungry. Empty while the framework has no queues.
	Queues []Queue `json:"queues,omitempty"`
}

// Queue is one tenant queue in a Report.
type Queue struct {
	// Name is the queue's name; Parent its parent's, empty for a child
	// of the root.
	Name   string `json:"name"`
	Parent string `json:"parent,omitempty"`
	// Allocated is what its running pods request; Pending what its
	// waiting pods request; FairShare what it may use now.
	Allocated v1.ResourceList `json:"allocated,omitempty"`
	Pending   v1.ResourceList `json:"pending,omitempty"`
	FairShare v1.ResourceList `json:"fairShare,omitempty"`
	// PendingJobs counts its jobs with pods waiting.
	PendingJobs int `json:"pendingJobs"`
}

// Gang is one waiting job.
type Gang struct {
	// Name identifies the job, e.g. "<namespace>/<group name>".
	Name string `json:"name"`
	// Members is how many of its pods wait.
	Members int `json:"members"`
	// MinMember is its quorum: how many must be placed together.
	MinMember int `json:"minMember"`
	// Total is the sum of the waiting members' requests.
	Total v1.ResourceList `json:"total"`
	// Reason is why it waits, as the scheduler last reported it.
	Reason string `json:"reason,omitempty"`
}

// Validate reports the first thing wrong in r: a negative quantity, an
// empty resource name or an invalid node name, or inconsistent counts.
func (r *Report) Validate() error {
	if err := checkList("unmet", r.Unmet); err != nil {
		return err
	}
	if err := checkList("largestUnit", r.LargestUnit); err != nil {
		return err
	}
	if r.Waiting < 0 {
		return fmt.Errorf("waiting: %d is negative", r.Waiting)
	}
	if g := r.LargestGang; g != nil {
		if g.Name == "" {
			return errors.New("largestGang.name: empty")
		}
		if g.Members < 0 || g.MinMember < 0 {
			return fmt.Errorf("largestGang %q: members %d and minMember %d must not be negative", g.Name, g.Members, g.MinMember)
		}
		if err := checkList("largestGang.total", g.Total); err != nil {
			return err
		}
	}
	for i, q := range r.Queues {
		if q.Name == "" {
			return fmt.Errorf("queues[%d].name: empty", i)
		}
		if q.PendingJobs < 0 {
			return fmt.Errorf("queues[%d] %q: pendingJobs %d is negative", i, q.Name, q.PendingJobs)
		}
		for field, l := range map[string]v1.ResourceList{"allocated": q.Allocated, "pending": q.Pending, "fairShare": q.FairShare} {
			if err := checkList(fmt.Sprintf("queues[%d].%s", i, field), l); err != nil {
				return err
			}
		}
	}
	for name, rv := range r.ObservedGrants {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return fmt.Errorf("observedGrants: grant name %q: %s", name, errs[0])
		}
		if rv == "" {
			return fmt.Errorf("observedGrants[%s]: empty resourceVersion", name)
		}
	}
	for node, l := range r.Used {
		if errs := validation.IsDNS1123Subdomain(node); len(errs) > 0 {
			return fmt.Errorf("used: node name %q: %s", node, errs[0])
		}
		if err := checkList(fmt.Sprintf("used[%s]", node), l); err != nil {
			return err
		}
	}
	return nil
}

func checkList(field string, l v1.ResourceList) error {
	if len(l) > v1alpha1.MaxResources {
		return fmt.Errorf("%s: %d resource names, at most %d allowed", field, len(l), v1alpha1.MaxResources)
	}
	for name, q := range l {
		if name == "" {
			return fmt.Errorf("%s: empty resource name", field)
		}
		if q.Sign() < 0 {
			return fmt.Errorf("%s[%s]: %s is negative", field, name, q.String())
		}
	}
	return nil
}

// Fetch GETs the report at url with client and validates it. Errors name
// the URL and what was wrong with the answer.
func Fetch(ctx context.Context, client *http.Client, url string) (*Report, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("demand from %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("demand from %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("demand from %s: reading the answer: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("demand from %s: HTTP %d: %.200s", url, resp.StatusCode, body)
	}
	if len(body) > MaxReportBytes {
		return nil, fmt.Errorf("demand from %s: answer larger than %d bytes", url, MaxReportBytes)
	}
	var r Report
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("demand from %s: decoding the answer: %w", url, err)
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("demand from %s: %w", url, err)
	}
	return &r, nil
}

// Handler serves the report that current returns, as JSON, to GET.
func Handler(current func() *Report) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(current())
	})
}
