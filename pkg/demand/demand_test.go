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
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestFetch(t *testing.T) {
	good := &Report{
		Framework: "batch", Waiting: 3,
		Unmet:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")},
		LargestUnit: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		LargestGang: &Gang{Name: "ns/train", Members: 3, MinMember: 3, Total: v1.ResourceList{v1.ResourceCPU: resource.MustParse("6")}},
		Used:        map[string]v1.ResourceList{"node-a": {v1.ResourceMemory: resource.MustParse("1Gi")}},
	}
	tests := []struct {
		name    string
		serve   http.Handler
		wantErr []string
	}{
		{name: "valid", serve: Handler(func() *Report { return good })},
		{name: "not JSON", serve: text(200, "<html>oops</html>"), wantErr: []string{"decoding the answer"}},
		{name: "server error", serve: text(503, "busy"), wantErr: []string{"HTTP 503", "busy"}},
		{name: "negative unmet", serve: text(200, `{"unmet":{"cpu":"-1"}}`), wantErr: []string{"unmet[cpu]", "negative"}},
		{name: "bad node name", serve: text(200, `{"used":{"Node_A":{"cpu":"1"}}}`), wantErr: []string{`"Node_A"`}},
		{name: "gang without name", serve: text(200, `{"largestGang":{"members":2}}`), wantErr: []string{"largestGang.name"}},
		{name: "negative count", serve: text(200, `{"waiting":-4}`), wantErr: []string{"waiting", "negative"}},
		{name: "bad quantity", serve: text(200, `{"unmet":{"cpu":"lots"}}`), wantErr: []string{"decoding the answer"}},
		{name: "too large", serve: text(200, `{"framework":"`+strings.Repeat("x", MaxReportBytes)+`"}`), wantErr: []string{"larger than"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.serve)
			defer srv.Close()
			r, err := Fetch(t.Context(), srv.Client(), srv.URL+Path)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Fetch: %v", err)
				}
				used := r.Used["node-a"]
				if r.LargestGang == nil || r.LargestGang.Members != 3 || used.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
					t.Errorf("Fetch = %+v, want the served report", r)
				}
				return
			}
			if err == nil {
				t.Fatalf("Fetch = %+v, want an error", r)
			}
			for _, w := range append(tt.wantErr, srv.URL) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func text(code int, body string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(code)
		_, _ = w.Write([]byte(body))
	})
}

func TestValidateQueues(t *testing.T) {
	cpu := func(q string) v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)} }
	good := func() []Queue {
		return []Queue{
			{Name: "org", Allocated: cpu("4"), FairShare: cpu("8")},
			{Name: "team-a", Parent: "org", Allocated: cpu("4"), Pending: cpu("2"), FairShare: cpu("4"), PendingJobs: 1},
		}
	}
	tests := []struct {
		name    string
		change  func(qs []Queue)
		wantErr string // "" for valid
	}{
		{name: "valid", change: func([]Queue) {}},
		{name: "nothing but names", change: func(qs []Queue) { qs[1] = Queue{Name: "team-a"} }},
		{name: "empty name", change: func(qs []Queue) { qs[1].Name = "" }, wantErr: "queues[1].name: empty"},
		{name: "negative pendingJobs", change: func(qs []Queue) { qs[1].PendingJobs = -1 },
			wantErr: `queues[1] "team-a": pendingJobs -1 is negative`},
		{name: "negative allocated", change: func(qs []Queue) { qs[0].Allocated = cpu("-1") },
			wantErr: "queues[0].allocated[cpu]: -1 is negative"},
		{name: "negative pending", change: func(qs []Queue) { qs[1].Pending = cpu("-500m") },
			wantErr: "queues[1].pending[cpu]: -500m is negative"},
		{name: "negative fair share", change: func(qs []Queue) { qs[1].FairShare = cpu("-2") },
			wantErr: "queues[1].fairShare[cpu]: -2 is negative"},
		{name: "empty resource name", change: func(qs []Queue) { qs[0].FairShare = v1.ResourceList{"": resource.MustParse("1")} },
			wantErr: "queues[0].fairShare: empty resource name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Queues: good()}
			tt.change(r.Queues)
			err := r.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("Validate() = %q, want %q", got, tt.wantErr)
			}
		})
	}
}
