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
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/pager"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
	"github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// apiServer is the origin of the objects listed from the API server.
const apiServer = ""

// truth is what the sources say: the API server's nodes and pods, and the
// custom informers' objects, each with the name of its origin (apiServer,
// or the custom informer's name).
type truth struct {
	nodes      map[string]*v1.Node
	nodeOrigin map[string]string
	pods       map[types.UID]*v1.Pod
	podOrigin  map[types.UID]string
	// workloads are the ExternalWorkloads by their external-usage key.
	workloads map[string]*v1alpha1.ExternalWorkload
	// workloadSources counts the custom informers of ExternalWorkloads.
	workloadSources int
	customSources   int
}

// subject is what a re-check fetches again for a difference.
type subject struct {
	// pod is "namespace/name" of a pod; podNamespace a namespace whose
	// pods are listed; node a node fetched by name; podsOnNode a node
	// whose pods are listed.
	pod, podNamespace, node, podsOnNode string
	// custom: list the custom sources again.
	custom bool
}

// verifier is one run of the checker.
type verifier struct {
	c           *cache.SchedulerCache
	opts        VerifyOptions
	longestHold time.Duration
	// rules are the handler's eventhandlers.StateRules, nil for none.
	rules eventhandlers.StateRules
}

// view takes a copy of the cache and notes how long it held the locks.
func (v *verifier) view() *cache.View {
	cv := v.c.View()
	v.longestHold = max(v.longestHold, cv.LongestHold)
	if v.opts.alterView != nil {
		v.opts.alterView(cv)
	}
	return cv
}

// putNode records node, from origin, in tr as the handler's rules
// (v.rules) let the cache see it; a node they leave out is removed.
func (v *verifier) putNode(tr *truth, node *v1.Node, origin string) {
	name := node.Name
	if v.rules != nil {
		node = v.rules.TrackedNode(node)
	}
	if node == nil {
		delete(tr.nodes, name)
		delete(tr.nodeOrigin, name)
		return
	}
	tr.nodes[name] = node
	tr.nodeOrigin[name] = origin
}

// putPod is putNode for a pod.
func (v *verifier) putPod(tr *truth, pod *v1.Pod, origin string) {
	uid := pod.UID
	if v.rules != nil {
		pod = v.rules.TrackedPod(pod)
	}
	if pod == nil {
		delete(tr.pods, uid)
		delete(tr.podOrigin, uid)
		return
	}
	tr.pods[uid] = pod
	tr.podOrigin[uid] = origin
}

// putWorkload is putNode for an external workload, kept by its key.
func (v *verifier) putWorkload(tr *truth, w *v1alpha1.ExternalWorkload) {
	key := externalWorkloadKey(w)
	if v.rules != nil {
		w = v.rules.TrackedExternalWorkload(w)
	}
	if w == nil {
		delete(tr.workloads, key)
		return
	}
	tr.workloads[key] = w
}

// listAll lists every source.
func (v *verifier) listAll(ctx context.Context) (*truth, error) {
	tr := &truth{
		nodes: map[string]*v1.Node{}, nodeOrigin: map[string]string{},
		pods: map[types.UID]*v1.Pod{}, podOrigin: map[types.UID]string{},
		workloads: map[string]*v1alpha1.ExternalWorkload{},
	}
	if err := v.listNodes(ctx, tr); err != nil {
		return nil, err
	}
	if err := v.listPods(ctx, tr, metav1.ListOptions{}); err != nil {
		return nil, err
	}
	if err := v.listCustom(ctx, tr); err != nil {
		return nil, err
	}
	return tr, nil
}

func (v *verifier) listNodes(ctx context.Context, tr *truth) error {
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return v.opts.Client.CoreV1().Nodes().List(ctx, opts)
	}))
	p.PageSize = v.opts.PageSize
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		v.putNode(tr, obj.(*v1.Node), apiServer)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: nodes: %w", ErrVerifyList, err)
	}
	return nil
}

// listPods lists the API server's pods that opts select and adds them to
// tr.
func (v *verifier) listPods(ctx context.Context, tr *truth, opts metav1.ListOptions, namespace ...string) error {
	ns := metav1.NamespaceAll
	if len(namespace) > 0 {
		ns = namespace[0]
	}
	p := pager.New(pager.SimplePageFunc(func(o metav1.ListOptions) (runtime.Object, error) {
		return v.opts.Client.CoreV1().Pods(ns).List(ctx, o)
	}))
	p.PageSize = v.opts.PageSize
	err := p.EachListItem(ctx, opts, func(obj runtime.Object) error {
		v.putPod(tr, obj.(*v1.Pod), apiServer)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: pods: %w", ErrVerifyList, err)
	}
	return nil
}

// listCustom lists every custom informer: through its ListerWatcher when
// it has one, from the informer's own store otherwise. Nodes, Pods and
// ExternalWorkloads are kept; other resources (Grants, dynamic ones) are
// not part of the cache's state.
func (v *verifier) listCustom(ctx context.Context, tr *truth) error {
	cis := v.c.CustomInformers()
	tr.customSources = len(cis)
	tr.workloadSources = 0
	for _, ci := range cis {
		switch ci.Resource {
		case framework.Node, framework.Pod, framework.ExternalWorkload:
		default:
			continue
		}
		if ci.Resource == framework.ExternalWorkload {
			tr.workloadSources++
		}
		var items []any
		if ci.ListerWatcher != nil {
			list, err := toolscache.ToListerWatcherWithContext(ci.ListerWatcher).ListWithContext(ctx, metav1.ListOptions{})
			if err != nil {
				return fmt.Errorf("%w: custom informer %q: %w", ErrVerifyList, ci.Name, err)
			}
			if err := meta.EachListItem(list, func(o runtime.Object) error {
				items = append(items, o)
				return nil
			}); err != nil {
				return fmt.Errorf("%w: custom informer %q: reading its list: %w", ErrVerifyList, ci.Name, err)
			}
		} else {
			items = ci.Informer.GetStore().List()
		}
		for _, item := range items {
			switch o := item.(type) {
			case *v1.Node:
				v.putNode(tr, o, ci.Name)
			case *v1.Pod:
				v.putPod(tr, o, ci.Name)
			case *v1alpha1.ExternalWorkload:
				v.putWorkload(tr, o)
			default:
				return fmt.Errorf("%w: custom informer %q of %s: an item of type %T", ErrVerifyList, ci.Name, ci.Resource, item)
			}
		}
	}
	return nil
}

// refresh reads again what the candidate differences diffs are about and
// updates tr: single objects by GET and the pods of a namespace or node by
// a list, at most MaxTargeted requests, or everything when more would be
// needed. Custom sources are listed again whenever a difference concerns
// them.
func (v *verifier) refresh(ctx context.Context, tr *truth, diffs []Difference) error {
	pods, namespaces, nodes, podsOnNodes := map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	custom := false
	for _, d := range diffs {
		s := d.subject
		if s.pod != "" {
			pods[s.pod] = true
		}
		if s.podNamespace != "" {
			namespaces[s.podNamespace] = true
		}
		if s.node != "" {
			nodes[s.node] = true
		}
		if s.podsOnNode != "" {
			podsOnNodes[s.podsOnNode] = true
		}
		custom = custom || s.custom
	}
	if custom || tr.customSources > 0 {
		// Custom objects are replaced wholesale, so drop what came from
		// them before listing again.
		for name, origin := range tr.nodeOrigin {
			if origin != apiServer {
				delete(tr.nodes, name)
				delete(tr.nodeOrigin, name)
			}
		}
		for uid, origin := range tr.podOrigin {
			if origin != apiServer {
				delete(tr.pods, uid)
				delete(tr.podOrigin, uid)
			}
		}
		clear(tr.workloads)
		if err := v.listCustom(ctx, tr); err != nil {
			return err
		}
	}
	if len(pods)+len(namespaces)+len(nodes)+len(podsOnNodes) > v.opts.MaxTargeted {
		return v.relistAPI(ctx, tr)
	}
	for name := range nodes {
		n, err := v.opts.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if tr.nodeOrigin[name] == apiServer {
				delete(tr.nodes, name)
				delete(tr.nodeOrigin, name)
			}
		case err != nil:
			return fmt.Errorf("%w: node %q: %w", ErrVerifyList, name, err)
		default:
			v.putNode(tr, n, apiServer)
		}
	}
	var byKey map[string][]types.UID
	if len(pods) > 0 {
		byKey = make(map[string][]types.UID, len(tr.pods))
		for uid, p := range tr.pods {
			if tr.podOrigin[uid] == apiServer {
				key := p.Namespace + "/" + p.Name
				byKey[key] = append(byKey[key], uid)
			}
		}
	}
	for key := range pods {
		ns, name, err := toolscache.SplitMetaNamespaceKey(key)
		if err != nil {
			return fmt.Errorf("%w: pod %q: %w", ErrVerifyList, key, err)
		}
		p, err := v.opts.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("%w: pod %q: %w", ErrVerifyList, key, err)
		}
		for _, uid := range byKey[key] {
			delete(tr.pods, uid)
			delete(tr.podOrigin, uid)
		}
		if err == nil {
			v.putPod(tr, p, apiServer)
		}
	}
	for ns := range namespaces {
		tr.dropAPIPods(func(old *v1.Pod) bool { return old.Namespace == ns })
		if err := v.listPods(ctx, tr, metav1.ListOptions{}, ns); err != nil {
			return err
		}
	}
	for node := range podsOnNodes {
		tr.dropAPIPods(func(old *v1.Pod) bool { return old.Spec.NodeName == node })
		sel := fields.OneTermEqualSelector("spec.nodeName", node).String()
		if err := v.listPods(ctx, tr, metav1.ListOptions{FieldSelector: sel}); err != nil {
			return err
		}
	}
	return nil
}

// relistAPI replaces what came from the API server with a fresh list.
func (v *verifier) relistAPI(ctx context.Context, tr *truth) error {
	for name, origin := range tr.nodeOrigin {
		if origin == apiServer {
			delete(tr.nodes, name)
			delete(tr.nodeOrigin, name)
		}
	}
	tr.dropAPIPods(func(*v1.Pod) bool { return true })
	if err := v.listNodes(ctx, tr); err != nil {
		return err
	}
	return v.listPods(ctx, tr, metav1.ListOptions{})
}

// dropAPIPods removes the API server's pods that match.
func (tr *truth) dropAPIPods(match func(*v1.Pod) bool) {
	for uid, p := range tr.pods {
		if tr.podOrigin[uid] == apiServer && match(p) {
			delete(tr.pods, uid)
			delete(tr.podOrigin, uid)
		}
	}
}

// externalWorkloadKey is the key the default event handler accounts an
// ExternalWorkload under (defaulthandler.ExternalWorkloadKey).
func externalWorkloadKey(w *v1alpha1.ExternalWorkload) string {
	if w.Namespace != "" {
		return externalWorkloadKeyPrefix + w.Namespace + "/" + w.Name
	}
	return externalWorkloadKeyPrefix + w.Name
}

const externalWorkloadKeyPrefix = "externalworkload/"
