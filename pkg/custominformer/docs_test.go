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

package custominformer

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resourcemanager"
)

// docPath is the protocol document whose examples TestDocExamples checks.
const docPath = "../../docs/external-resource-managers.md"

// docExample is one `$ curl ...` example of the document and the output
// it shows.
type docExample struct {
	line    int // of the curl command
	flags   string
	url     string
	output  []string
	context string // the command, for messages
}

var curlRE = regexp.MustCompile(`^\$ curl (-[a-zA-Z]+(?: -[a-zA-Z]+)*) '([^']+)'$`)

// readDoc returns the curl examples of the document, in order, and the
// lines of its plain code blocks that start with "GET ".
func readDoc(t *testing.T) (examples []docExample, gets []string) {
	t.Helper()
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	var cur *docExample
	in, lang, indent := false, "", ""
	for i, raw := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimLeft(raw, " ")
		if strings.HasPrefix(trimmed, "```") {
			if !in {
				in, lang, indent = true, strings.TrimPrefix(trimmed, "```"), raw[:len(raw)-len(trimmed)]
				continue
			}
			if cur != nil {
				examples = append(examples, *cur)
				cur = nil
			}
			in = false
			continue
		}
		switch {
		case !in:
		case cur != nil:
			cur.output = append(cur.output, strings.TrimPrefix(raw, indent))
		case lang == "console" && strings.HasPrefix(trimmed, "$ curl") && strings.Contains(trimmed, "127.0.0.1:8080"):
			m := curlRE.FindStringSubmatch(trimmed)
			if m == nil {
				t.Fatalf("%s:%d: cannot parse %q", docPath, i+1, trimmed)
			}
			cur = &docExample{line: i + 1, flags: m[1], url: m[2], context: trimmed}
		case lang == "" && strings.HasPrefix(trimmed, "GET "):
			gets = append(gets, strings.TrimPrefix(trimmed, "GET "))
		}
	}
	return examples, gets
}

// docVM is a VM of the document's examples.
func docVM(name, node, cpu string) *v1alpha1.ExternalWorkload {
	return &v1alpha1.ExternalWorkload{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.ExternalWorkloadSpec{
			NodeName: node, WorkloadKind: "vm", Owner: "team-a",
			Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi")},
		},
		Status: v1alpha1.ExternalWorkloadStatus{Phase: v1alpha1.ExternalWorkloadRunning},
	}
}

// TestDocExamples runs every curl example of
// docs/external-resource-managers.md, in order, against the server the
// document describes, making the changes the text says happened, and
// compares the output with the document's.
func TestDocExamples(t *testing.T) {
	examples, _ := readDoc(t)
	if len(examples) != 4 {
		t.Fatalf("found %d curl examples in %s, want 4 (list, watch, 410, 400): update this test with the document", len(examples), docPath)
	}
	store, err := resourcemanager.New(resourcemanager.Options{
		GroupVersionKind: v1alpha1.SchemeGroupVersion.WithKind("ExternalWorkload"),
		Resource:         v1alpha1.ExternalWorkloadsResource, Example: &v1alpha1.ExternalWorkload{},
		HistorySize: 5, BookmarkInterval: 2 * time.Second, InitialResourceVersion: 1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	srv := httptest.NewServer(store.Handler())
	t.Cleanup(srv.Close)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(store.Create(docVM("vm-1", "node-a", "4")))
	must(store.Create(docVM("vm-2", "node-b", "2")))

	// What happens at the manager while each example's request runs, as
	// the document tells it.
	during := map[int]func(){
		// "while it ran, vm-1 grew to 6 CPUs and vm-2 stopped and was deleted"
		1: func() {
			must(store.Update(docVM("vm-1", "node-a", "6")))
			vm2 := docVM("vm-2", "node-b", "2")
			vm2.Status.Phase = v1alpha1.ExternalWorkloadStopped
			must(store.Update(vm2))
			must(store.Delete("", "vm-2"))
		},
	}
	// ... and before it: "Three more changes had pushed version 1003 out
	// of the five-event history".
	before := map[int]func(){
		2: func() {
			must(store.Create(docVM("vm-3", "node-c", "1")))
			must(store.Update(docVM("vm-3", "node-c", "2")))
			must(store.Delete("", "vm-3"))
		},
	}
	for i, ex := range examples {
		if f := before[i]; f != nil {
			f()
		}
		url := strings.Replace(ex.url, "http://127.0.0.1:8080", srv.URL, 1)
		if url == ex.url {
			t.Fatalf("%s:%d: the example does not use http://127.0.0.1:8080", docPath, ex.line)
		}
		resp, err := http.Get(url)
		must(err)
		if f := during[i]; f != nil {
			f()
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		must(err)
		want := ex.output
		if strings.Contains(ex.flags, "i") {
			// The status line and headers, then an empty line.
			var got []string
			got = append(got, resp.Proto+" "+resp.Status)
			n := slices.Index(want, "")
			if n < 1 {
				t.Fatalf("%s:%d: no empty line after the headers", docPath, ex.line)
			}
			for _, h := range want[1:n] {
				name, _, _ := strings.Cut(h, ": ")
				if name == "Transfer-Encoding" {
					got = append(got, name+": "+strings.Join(resp.TransferEncoding, ", "))
				} else {
					got = append(got, name+": "+resp.Header.Get(name))
				}
			}
			if !reflect.DeepEqual(got, want[:n]) {
				t.Errorf("%s:%d: %s\nheaders:\n%s\nthe document shows:\n%s", docPath, ex.line, ex.context,
					strings.Join(got, "\n"), strings.Join(want[:n], "\n"))
			}
			want = want[n+1:]
		}
		if strings.HasPrefix(want[0], "{") && strings.HasPrefix(want[len(want)-1], "}") && len(want) > 1 {
			// Indented for reading: compare as JSON.
			var g, w any
			must(json.Unmarshal(body, &g))
			if err := json.Unmarshal([]byte(strings.Join(want, "\n")), &w); err != nil {
				t.Fatalf("%s:%d: the document's output is not JSON: %v", docPath, ex.line, err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("%s:%d: %s\nanswered:\n%s\nthe document shows:\n%s", docPath, ex.line, ex.context, body, strings.Join(want, "\n"))
			}
			continue
		}
		got := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:%d: %s\nanswered:\n%s\nthe document shows:\n%s", docPath, ex.line, ex.context,
				strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestDocRequests checks the requests the document says the scheduler
// sends (the GET lines of its plain code blocks: the first list, a
// relist, a watch) against the requests the http source really sends.
func TestDocRequests(t *testing.T) {
	_, gets := readDoc(t)
	var docList, docRelist, docWatch string
	for _, g := range gets {
		switch {
		case strings.Contains(g, "watch=true"):
			docWatch = g
		case strings.Contains(g, "resourceVersion=0"):
			docList = g
		default:
			docRelist = g
		}
	}
	if docList == "" || docRelist == "" || docWatch == "" || len(gets) != 3 {
		t.Fatalf("the GET lines of %s are %q; want a first list, a relist and a watch", docPath, gets)
	}

	store := newStore(t, 1000)
	if err := store.Create(workload("", "vm-1", "team-a")); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	watches := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.RequestURI())
		watch := r.URL.Query().Get("watch") == "true"
		if watch {
			watches++
		}
		first := watch && watches == 1
		mu.Unlock()
		if first {
			// Make the informer list again.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(expiredLine))
			return
		}
		store.Handler().ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	b := buildHTTP(t, "url: "+srv.URL+"\n")
	startInformer(t, b)
	waitFor(t, "a list, a watch, a relist and a watch", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= 4
	})
	mu.Lock()
	got := slices.Clone(seen[:4])
	mu.Unlock()
	// Versions and the watch timeout vary; the rest must be as written.
	rv := regexp.MustCompile(`resourceVersion=[1-9][0-9]*`)
	timeout := regexp.MustCompile(`timeoutSeconds=([0-9]+)`)
	norm := func(s string) string {
		return timeout.ReplaceAllString(rv.ReplaceAllString(s, "resourceVersion=N"), "timeoutSeconds=S")
	}
	for i, want := range []string{docList, norm(docWatch), docRelist, norm(docWatch)} {
		if g := got[i]; norm(g) != want {
			t.Errorf("request %d was\n  GET %s\nthe document shows\n  GET %s", i+1, g, want)
		}
	}
	for _, g := range []string{got[1], got[3]} {
		m := timeout.FindStringSubmatch(g)
		if n, _ := strconv.Atoi(m[1]); n < 300 || n > 600 {
			t.Errorf("watch %s: timeoutSeconds not in [300, 600] as documented", g)
		}
	}
	if t.Failed() {
		return
	}
	// The watch after the relist resumes from the relist's version.
	_, listRV := store.List("")
	if !strings.Contains(got[3], "resourceVersion="+listRV) {
		t.Errorf("the watch after the relist, %s, is not from the list's version %s", got[3], listRV)
	}
}
