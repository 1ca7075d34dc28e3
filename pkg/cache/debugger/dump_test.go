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

package debugger

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// dumpFixture builds a cache with a node and a placeholder, each with a
// pod.
func dumpFixture(t *testing.T) *cache.SchedulerCache {
	t.Helper()
	c, _ := newTestCache(t, cache.Options{})
	mustNoErr(t, "AddOrUpdateNode", c.AddOrUpdateNode(bigNode("n1")))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("a").Node("n1").Phase(v1.PodRunning).Req(res{v1.ResourceCPU: "2"}).Obj()))
	mustNoErr(t, "AddPod", c.AddPod(st.MakePod().Name("orphan").Node("gone").Phase(v1.PodRunning).Obj()))
	return c
}

func TestDumpHandler(t *testing.T) {
	c := dumpFixture(t)
	srv := httptest.NewServer(DumpHandler(c))
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	mustNoErr(t, "GET", err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %s, Content-Type %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	var got map[string]any
	mustNoErr(t, "decoding", json.NewDecoder(resp.Body).Decode(&got))
	for _, key := range []string{"generation", "nodes", "jobs", "queue", "handlers", "events"} {
		if _, ok := got[key]; !ok {
			t.Errorf("dump JSON has no %q: %v", key, got)
		}
	}
	nodes, _ := got["nodes"].([]any)
	if len(nodes) != 2 {
		t.Fatalf("nodes = %v", got["nodes"])
	}
	if n := nodes[1].(map[string]any); n["name"] != "n1" || n["idle"].(map[string]any)["milliCPU"] != float64(8000) {
		t.Errorf("n1 = %v", n)
	}
	// Indented, for people.
	body, err := json.MarshalIndent(c.Dump(), "", "  ")
	mustNoErr(t, "MarshalIndent", err)
	if !strings.Contains(string(body), "\n  \"nodes\": [") {
		t.Errorf("dump is not indented:\n%s", body)
	}

	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, err := http.NewRequest(method, srv.URL, nil)
		mustNoErr(t, "NewRequest", err)
		resp, err := http.DefaultClient.Do(req)
		mustNoErr(t, method, err)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %s, Allow %q; want 405 with Allow: GET, HEAD", method, resp.Status, resp.Header.Get("Allow"))
		}
	}
}
