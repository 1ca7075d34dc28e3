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

package nodeledger

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/ledger"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// podNodeIndex names the pod informer's index by spec.nodeName, which
// the plugin adds.
const podNodeIndex = "nodeledger.batch-scheduler.io/spec.nodeName"

// placer is the scheduler's one side of the ledgers: the state every
// profile's plugin shares (see the package documentation).
type placer struct {
	args     Args
	selector labels.Selector
	ledgers  *ledger.Ledgers
	nodes    corelisters.NodeLister
	pods     toolscache.Indexer
	synced   []toolscache.InformerSynced
	now      func() time.Time

	// mu guards the maps below. It is never held during an API call.
	mu sync.Mutex
	// reserved holds, per node, the pods a cycle placed there whose bind
	// is not yet seen by the informer (nor undone), with their requests.
	reserved map[string]map[types.UID]reservation
	// names are the scheduler names of the pods reserved so far: this
	// scheduler's own pods on a node it joins are those.
	names map[string]bool
	// joined holds the shared nodes whose ledger lists this placer as
	// last written or read.
	joined map[string]bool
	// own holds, per node, the pods this placer's entries in the node's
	// ledger record, as last written or read.
	own map[string]map[types.UID]podRef
}

// reservation is a pod a cycle placed on a node.
type reservation struct {
	pod *v1.Pod
	req resources.Resource
}

// podRef names a pod recorded in a ledger.
type podRef struct{ namespace, name string }

// fullError says a pod no longer fits a node's ledger.
type fullError struct{ msg string }

func (e *fullError) Error() string { return e.msg }

func newPlacer(a Args, sel labels.Selector, l *ledger.Ledgers, f informers.SharedInformerFactory) (*placer, error) {
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.AddIndexers(toolscache.Indexers{podNodeIndex: podNodeName}); err != nil {
		return nil, fmt.Errorf("%s: indexing pods by node: %w", Name, err)
	}
	nodeInf := f.Core().V1().Nodes()
	return &placer{
		args:     a,
		selector: sel,
		ledgers:  l,
		nodes:    nodeInf.Lister(),
		pods:     podInf.GetIndexer(),
		synced:   []toolscache.InformerSynced{podInf.HasSynced, nodeInf.Informer().HasSynced},
		now:      time.Now,
		reserved: map[string]map[types.UID]reservation{},
		names:    map[string]bool{},
		joined:   map[string]bool{},
		own:      map[string]map[types.UID]podRef{},
	}, nil
}

func podNodeName(obj any) ([]string, error) {
	var node string
	switch o := obj.(type) {
	case *v1.Pod:
		node = o.Spec.NodeName
	case *framework.PodRecord:
		node = o.NodeName()
	}
	if node == "" {
		return nil, nil
	}
	return []string{node}, nil
}

// shared reports whether nodeName is one of the shared nodes.
func (p *placer) shared(nodeName string) bool {
	n, err := p.nodes.Get(nodeName)
	return err == nil && p.selector.Matches(labels.Set(n.Labels))
}

func (p *placer) reserve(pod *v1.Pod, nodeName string) {
	req := resources.PodRequests(pod)
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.reserved[nodeName]
	if m == nil {
		m = map[types.UID]reservation{}
		p.reserved[nodeName] = m
	}
	m[pod.UID] = reservation{pod: pod, req: req}
	p.names[pod.Spec.SchedulerName] = true
}

func (p *placer) unreserve(ctx context.Context, pod *v1.Pod, nodeName string) {
	p.mu.Lock()
	delete(p.reserved[nodeName], pod.UID)
	if len(p.reserved[nodeName]) == 0 {
		delete(p.reserved, nodeName)
	}
	_, recorded := p.own[nodeName][pod.UID]
	p.mu.Unlock()
	if !recorded {
		return
	}
	logger := klog.FromContext(ctx)
	go func() {
		// Detached: Unreserve must not wait for the API server. What
		// fails here the release loop removes later.
		err := p.ledgers.Commit(context.Background(), nodeName, ledger.Existing, p.change(nodeName, nil))
		if err != nil {
			logger.V(2).Info("Releasing the ledger entry of an unreserved pod failed; the release loop retries", "pod", klog.KObj(pod), "node", nodeName, "err", err)
		}
	}()
}

// commit records pod on nodeName's ledger, joining it first if needed.
func (p *placer) commit(ctx context.Context, pod *v1.Pod, nodeName string) error {
	return p.ledgers.Commit(ctx, nodeName, ledger.Create, p.change(nodeName, pod))
}

// change is the ledger change of one commit to nodeName: join the ledger
// if this placer has not (recording its pods there), release the entries
// of its pods that are gone, and, when pod is not nil, check that pod
// fits and record it.
//
// It reads the ledger first (it is given it) and the informer and the
// reservations after: an entry written before this change's batch read
// the ledger belongs to a pod that was reserved before, and is still
// reserved or seen bound now, so it is not taken for gone.
func (p *placer) change(nodeName string, pod *v1.Pod) ledger.Change {
	return func(l *v1alpha1.NodeLedger) error {
		node, err := p.nodes.Get(nodeName)
		if err != nil {
			return fmt.Errorf("node %s is not known: %w", nodeName, err)
		}
		bound, err := p.pods.ByIndex(podNodeIndex, nodeName)
		if err != nil {
			return fmt.Errorf("listing the pods bound to node %s: %w", nodeName, err)
		}
		here := map[types.UID]*v1.Pod{}
		for _, obj := range bound {
			if bp, ok := framework.StoredPod(obj); ok && framework.PodCountedOnNode(bp) {
				here[bp.UID] = bp
			}
		}
		p.mu.Lock()
		reserved := make(map[types.UID]reservation, len(p.reserved[nodeName]))
		for uid, r := range p.reserved[nodeName] {
			reserved[uid] = r
		}
		names := make(map[string]bool, len(p.names))
		for n := range p.names {
			names[n] = true
		}
		p.mu.Unlock()

		name := p.args.Placer
		if ledger.Join(l, name, p.now()) {
			for _, bp := range here {
				if names[bp.Spec.SchedulerName] {
					ledger.Put(l, ledger.PodEntry(name, bp, resources.PodRequests(bp)))
				}
			}
			for _, r := range reserved {
				ledger.Put(l, ledger.PodEntry(name, r.pod, r.req))
			}
		}
		// Release this placer's entries of pods neither bound here nor
		// with a bind in flight here.
		ledger.RemoveIf(l, func(e *v1alpha1.LedgerEntry) bool {
			if e.Placer != name || e.Kind != v1alpha1.LedgerEntryKindPod {
				return false
			}
			_, isHere := here[e.UID]
			_, inFlight := reserved[e.UID]
			return !isHere && !inFlight
		})
		if pod != nil {
			recorded := ledger.PodUIDs(l)
			var others resources.Resource
			for uid, bp := range here {
				if !recorded[uid] && uid != pod.UID {
					others.Add(resources.PodRequests(bp))
				}
			}
			for uid, r := range reserved {
				if _, isHere := here[uid]; !isHere && !recorded[uid] && uid != pod.UID {
					others.Add(r.req)
				}
			}
			req := resources.PodRequests(pod)
			if r, ok := reserved[pod.UID]; ok {
				req = r.req
			}
			entries := ledger.Usage(l)
			if old := ledger.Find(l, ledger.Key{Kind: v1alpha1.LedgerEntryKindPod, Namespace: pod.Namespace, Name: pod.Name}); old != nil {
				entries.Sub(resources.FromList(old.Resources))
			}
			used := entries.Clone()
			used.Add(others)
			alloc := resources.FromList(node.Status.Allocatable)
			if short := ledger.Short(alloc, used, req); len(short) > 0 {
				return &fullError{msg: fmt.Sprintf("no room on node %s for pod %s/%s: %s short (the ledger's entries use %s, other pods %s, of %s allocatable; the pod asks %s)",
					nodeName, pod.Namespace, pod.Name, joinNames(short), entries, others, alloc, req)}
			}
			ledger.Put(l, ledger.PodEntry(name, pod, req))
		}
		p.record(nodeName, l)
		return nil
	}
}

// record notes what l, about to be written or found unchanged, says of
// this placer on nodeName. It is conservative when the write then fails:
// the release loop joins again and releases what is gone.
func (p *placer) record(nodeName string, l *v1alpha1.NodeLedger) {
	own := map[types.UID]podRef{}
	for i := range l.Spec.Entries {
		if e := &l.Spec.Entries[i]; e.Placer == p.args.Placer && e.Kind == v1alpha1.LedgerEntryKindPod {
			own[e.UID] = podRef{namespace: e.Namespace, name: e.Name}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.joined[nodeName] = ledger.Joined(l, p.args.Placer)
	if len(own) == 0 {
		delete(p.own, nodeName)
	} else {
		p.own[nodeName] = own
	}
}

// forget drops what the placer knows of nodeName's ledger after a failed
// write: the next tick commits to it again.
func (p *placer) forget(nodeName string) {
	p.ledgers.Forget(nodeName)
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.joined, nodeName)
}

func joinNames(names []v1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	return strings.Join(s, ", ")
}

// run joins the shared nodes and releases the entries of pods that are
// gone, every ReleaseInterval, once the informers have synced.
func (p *placer) run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("plugin", Name)
	if !toolscache.WaitForCacheSync(ctx.Done(), p.synced...) {
		return
	}
	logger.V(2).Info("Joining and releasing the ledgers of the shared nodes", "nodeSelector", p.selector.String(), "placer", p.args.Placer)
	wait.UntilWithContext(ctx, func(ctx context.Context) { p.tick(klog.NewContext(ctx, logger)) }, p.args.ReleaseInterval.Duration)
}

// tick forgets reservations whose binds are seen, and commits to every
// shared node not known joined, or where an entry of this placer records
// a pod that is gone.
func (p *placer) tick(ctx context.Context) {
	logger := klog.FromContext(ctx)
	p.forgetSeen()
	nodes, err := p.nodes.List(p.selector)
	if err != nil {
		logger.Error(err, "Listing the shared nodes")
		return
	}
	var due []string
	p.mu.Lock()
	for _, n := range nodes {
		if !p.joined[n.Name] || p.staleLocked(n.Name) {
			due = append(due, n.Name)
		}
	}
	p.mu.Unlock()
	sort.Strings(due)
	var wg sync.WaitGroup
	for _, name := range due {
		wg.Go(func() {
			if err := p.ledgers.Commit(ctx, name, ledger.Create, p.change(name, nil)); err != nil {
				logger.Error(err, "Joining or releasing a node's ledger; retrying", "node", name)
				p.forget(name)
			}
		})
	}
	wg.Wait()
}

// forgetSeen drops the reservations of pods the informer shows bound,
// to their node or another, or gone: from then on the informer answers
// for them.
func (p *placer) forgetSeen() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for node, m := range p.reserved {
		for uid, r := range m {
			obj, ok, err := p.pods.GetByKey(r.pod.Namespace + "/" + r.pod.Name)
			if err != nil {
				continue
			}
			cur, _ := framework.StoredPod(obj)
			if !ok || cur == nil || cur.UID != uid || cur.Spec.NodeName != "" || framework.PodFinished(cur) {
				delete(m, uid)
			}
		}
		if len(m) == 0 {
			delete(p.reserved, node)
		}
	}
}

// staleLocked reports whether an entry of this placer on nodeName records
// a pod that is no longer bound there, nor reserved there.
func (p *placer) staleLocked(nodeName string) bool {
	for uid, ref := range p.own[nodeName] {
		if _, ok := p.reserved[nodeName][uid]; ok {
			continue
		}
		obj, ok, err := p.pods.GetByKey(ref.namespace + "/" + ref.name)
		if err != nil {
			continue
		}
		cur, _ := framework.StoredPod(obj)
		if !ok || cur == nil || cur.UID != uid || cur.Spec.NodeName != nodeName || !framework.PodCountedOnNode(cur) {
			return true
		}
	}
	return false
}
