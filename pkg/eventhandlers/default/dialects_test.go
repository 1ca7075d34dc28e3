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

package defaulthandler_test

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	st "github.com/batch-scheduler/batch-scheduler/pkg/testing"
)

// A made-up dialect, added as one entry of the table: pods name their
// gang with the label example.com/gang, and a Gang object of
// gangs.v1.example.com gives its quorum in spec.size.
var gangGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gangs"}

const gangKind framework.GroupKind = "Gang.example.com"

var exampleDialect = dialects.Dialect{
	Kind:      gangKind,
	Resources: []dialects.Resource{{GVR: gangGVR}},
	Match: func(pod *v1.Pod) []framework.GroupRef {
		if v := pod.Labels["example.com/gang"]; v != "" {
			return []framework.GroupRef{{Kind: gangKind, Name: v, Object: v, Via: "label example.com/gang"}}
		}
		return nil
	},
	Policy: func(u *unstructured.Unstructured, _ bool) *framework.GroupPolicy {
		p := &framework.GroupPolicy{Source: string(gangKind) + " " + u.GetNamespace() + "/" + u.GetName()}
		n, found, err := dialects.IntField(u.Object, "", "spec", "size")
		switch {
		case err != nil:
			p.Err = err
		case !found || n < 1:
			p.Err = errors.New("spec.size is not an integer >= 1")
		default:
			p.MinMember = int32(n)
		}
		return p
	},
	Fields: [][]string{{"spec", "size"}},
}

// Adding a dialect is one entry of the table: through the default handler
// and the real cache, the pods that carry its label are one gang, whose
// quorum its object gives; the handler watches its resource (slimmed).
func TestMadeUpDialectThroughTheHandler(t *testing.T) {
	c, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := defaulthandler.New(t.Context(), c, nil, &rest.Config{Host: "https://127.0.0.1:1"},
		defaulthandler.WithDialects(dialects.Builtin().With(exampleDialect)))
	if err != nil {
		t.Fatal(err)
	}
	var watched bool
	for _, r := range h.DiscoveredResources() {
		if r.GVR == gangGVR {
			watched = r.Transform != nil
		}
	}
	if !watched {
		t.Fatalf("the handler does not watch %v (slimmed): %+v", gangGVR, h.DiscoveredResources())
	}
	for _, name := range []string{"a", "b", "c"} {
		h.AddPod(st.MakePod().Namespace("ns").Name(name).UID(name).Label("example.com/gang", "train").Obj())
	}
	h.AddPod(st.MakePod().Namespace("ns").Name("alone").UID("alone").Obj())
	id := framework.JobID{Namespace: "ns", Name: "train", Gang: true}
	job, ok := c.Job(id)
	if !ok || len(job.Tasks) != 3 || job.GroupKind() != gangKind {
		t.Fatalf("job %v: found %v, %d tasks, kind %q; want the three labelled pods of kind %s", id, ok, len(job.Tasks), job.GroupKind(), gangKind)
	}
	if job.ValidationError() == nil {
		t.Fatal("the gang is scheduled before its Gang object gives a quorum")
	}
	gang := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Gang",
		"metadata": map[string]any{"name": "train", "namespace": "ns", "resourceVersion": "1"},
		"spec":     map[string]any{"size": int64(3), "image": "not read"},
	}}
	h.AddDynamic(gangGVR, gang)
	if job, _ := c.Job(id); job.MinAvailable() != 3 || job.ValidationError() != nil {
		t.Fatalf("after the Gang object: min %d, error %v; want 3 and none", job.MinAvailable(), job.ValidationError())
	}
	if _, ok := c.Job(framework.JobID{Namespace: "ns", Name: "alone"}); !ok {
		t.Error("the pod without the label is not a job of its own")
	}
	// Without the entry, the same pods are single pods.
	plain, err := cache.New(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h2, err := defaulthandler.New(t.Context(), plain, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h2.AddPod(st.MakePod().Namespace("ns").Name("a").UID("a").Label("example.com/gang", "train").Obj())
	if _, ok := plain.Job(id); ok {
		t.Error("the built-in table groups pods by the made-up label")
	}
}
