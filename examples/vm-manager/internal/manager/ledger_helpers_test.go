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

package manager

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	bslisters "github.com/batch-scheduler/batch-scheduler/pkg/generated/listers/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
)

// fakeLedgerAPI is an in-memory NodeLedger API (a ledger.Client): a map
// whose writes compare and swap the resourceVersion, as the API server
// does. Every write is mirrored into view, which stands for the manager's
// informer: one that never lags.
type fakeLedgerAPI struct {
	mu   sync.Mutex
	objs map[string]*v1alpha1.NodeLedger
	rv   int
	view cache.Indexer
	// beforeWrite, if set, runs at the start of every Create and Update
	// of the manager, before the write is checked, without mu held: a
	// racing placer writes there.
	beforeWrite func(l *v1alpha1.NodeLedger)
	// err, if set, fails every call of the manager: the API server is
	// unreachable.
	err error
	// reads and writes count the manager's calls.
	reads, writes int
}

var _ ledger.Client = (*fakeLedgerAPI)(nil)

func newFakeLedgerAPI() *fakeLedgerAPI {
	return &fakeLedgerAPI{objs: map[string]*v1alpha1.NodeLedger{}, view: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
}

func (f *fakeLedgerAPI) lister() bslisters.NodeLedgerLister {
	return bslisters.NewNodeLedgerLister(f.view)
}

func notFound(name string) error {
	return apierrors.NewNotFound(v1alpha1.Resource(v1alpha1.NodeLedgersResource), name)
}

func (f *fakeLedgerAPI) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1alpha1.NodeLedger, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return nil, f.err
	}
	l, ok := f.objs[name]
	if !ok {
		return nil, notFound(name)
	}
	return l.DeepCopy(), nil
}

func (f *fakeLedgerAPI) Create(_ context.Context, l *v1alpha1.NodeLedger, _ metav1.CreateOptions) (*v1alpha1.NodeLedger, error) {
	f.runHook(l)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.err != nil {
		return nil, f.err
	}
	if _, ok := f.objs[l.Name]; ok {
		return nil, apierrors.NewAlreadyExists(v1alpha1.Resource(v1alpha1.NodeLedgersResource), l.Name)
	}
	return f.storeLocked(l), nil
}

func (f *fakeLedgerAPI) Update(_ context.Context, l *v1alpha1.NodeLedger, _ metav1.UpdateOptions) (*v1alpha1.NodeLedger, error) {
	f.runHook(l)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.err != nil {
		return nil, f.err
	}
	cur, ok := f.objs[l.Name]
	if !ok {
		return nil, notFound(l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		return nil, apierrors.NewConflict(v1alpha1.Resource(v1alpha1.NodeLedgersResource), l.Name,
			fmt.Errorf("resourceVersion %s is not the current %s", l.ResourceVersion, cur.ResourceVersion))
	}
	return f.storeLocked(l), nil
}

func (f *fakeLedgerAPI) runHook(l *v1alpha1.NodeLedger) {
	f.mu.Lock()
	hook := f.beforeWrite
	f.mu.Unlock()
	if hook != nil {
		hook(l)
	}
}

// storeLocked stores a copy of l with the next resourceVersion and mirrors
// it into the view; f.mu is held.
func (f *fakeLedgerAPI) storeLocked(l *v1alpha1.NodeLedger) *v1alpha1.NodeLedger {
	f.rv++
	c := l.DeepCopy()
	c.ResourceVersion = strconv.Itoa(f.rv)
	f.objs[c.Name] = c
	if err := f.view.Update(c.DeepCopy()); err != nil {
		panic(err)
	}
	return c.DeepCopy()
}

// edit changes ledger name (created if missing) as another placer would,
// bypassing the hook and the counts.
func (f *fakeLedgerAPI) edit(name string, change func(l *v1alpha1.NodeLedger)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.objs[name]
	if !ok {
		l = &v1alpha1.NodeLedger{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	l = l.DeepCopy()
	change(l)
	f.storeLocked(l)
}

// editHidden is edit without the mirror into the view: the informer has
// not seen that change yet.
func (f *fakeLedgerAPI) editHidden(name string, change func(l *v1alpha1.NodeLedger)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.objs[name]
	if !ok {
		l = &v1alpha1.NodeLedger{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	l = l.DeepCopy()
	change(l)
	f.rv++
	l.ResourceVersion = strconv.Itoa(f.rv)
	f.objs[name] = l
}

// ledger returns a copy of ledger name, nil if there is none.
func (f *fakeLedgerAPI) ledger(name string) *v1alpha1.NodeLedger {
	f.mu.Lock()
	defer f.mu.Unlock()
	if l, ok := f.objs[name]; ok {
		return l.DeepCopy()
	}
	return nil
}

// setErr makes every call of the manager fail with err (nil: succeed).
func (f *fakeLedgerAPI) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// counts returns the manager's reads and writes so far.
func (f *fakeLedgerAPI) counts() (reads, writes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads, f.writes
}

// joined is a ledger change by which placers join.
func joined(placers ...string) func(*v1alpha1.NodeLedger) {
	return func(l *v1alpha1.NodeLedger) {
		for _, p := range placers {
			ledger.Join(l, p, t0)
		}
	}
}

// podEntry is batch-scheduler's entry of pod default/name with uid using
// cpu and memory.
func podEntry(name, uid, cpu, memory string) v1alpha1.LedgerEntry {
	return v1alpha1.LedgerEntry{Placer: "batch-scheduler", Kind: v1alpha1.LedgerEntryKindPod, Namespace: "default", Name: name,
		UID: types.UID(uid), Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}}
}

// vmEntry is this manager's entry of VM name.
func vmEntry(name, cpu, memory string) v1alpha1.LedgerEntry {
	return v1alpha1.LedgerEntry{Placer: DefaultLedgerPlacer, Kind: WorkloadKind, Name: name,
		Resources: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}}
}

// withEntries is a ledger change that puts es.
func withEntries(es ...v1alpha1.LedgerEntry) func(*v1alpha1.NodeLedger) {
	return func(l *v1alpha1.NodeLedger) {
		for _, e := range es {
			ledger.Put(l, e)
		}
	}
}

// entryNames lists the keys of l's entries as "Kind ns/name".
func entryNames(l *v1alpha1.NodeLedger) []string {
	if l == nil {
		return nil
	}
	var out []string
	for i := range l.Spec.Entries {
		e := &l.Spec.Entries[i]
		out = append(out, e.Kind+" "+e.Namespace+"/"+e.Name)
	}
	return out
}

// ledgerFixture is a fixture in ledger mode: its ledgers are in api, and
// the pods the API server has (for the GETs confirming a pod is gone) in
// podAPI.
type ledgerFixture struct {
	*fixture
	api    *fakeLedgerAPI
	podAPI *fake.Clientset
}

// withLedger turns ledger mode on, with the default placer and
// requirement, over api and podAPI.
func withLedger(api *fakeLedgerAPI, podAPI *fake.Clientset) fixtureOpt {
	return func(_ *fixture, cfg *Config) {
		cfg.Ledger = &LedgerConfig{
			Ledgers: ledger.New(api, ledger.WithMaxAttempts(5)),
			View:    api.lister(),
			Pods:    podAPI.CoreV1(),
			Require: []string{DefaultLedgerRequire},
			Timeout: 10 * time.Second,
		}
	}
}

func newLedgerFixture(t *testing.T, opts ...fixtureOpt) *ledgerFixture {
	t.Helper()
	api := newFakeLedgerAPI()
	podAPI := fake.NewClientset()
	f := newFixture(t, "", append([]fixtureOpt{withLedger(api, podAPI)}, opts...)...)
	t.Cleanup(func() { f.m.joins.ShutDown() })
	return &ledgerFixture{fixture: f, api: api, podAPI: podAPI}
}

// podGets counts the GETs of pods sent to podAPI.
func (f *ledgerFixture) podGets() int {
	n := 0
	for _, a := range f.podAPI.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
			n++
		}
	}
	return n
}

// withUID sets pod's UID.
func withUID(pod *v1.Pod, uid string) *v1.Pod {
	pod.UID = types.UID(uid)
	return pod
}

// failPodGets makes the GETs of pod name fail with err.
func (f *ledgerFixture) failPodGets(name string, err error) {
	f.podAPI.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.GetAction).GetName() == name {
			return true, nil, err
		}
		return false, nil, nil
	})
}
