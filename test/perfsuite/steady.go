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

package perfsuite

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// steadyState deletes each pod of ns as soon as the watch shows it
// scheduled and creates another in its place, for d. It reacts to the
// watch's events, as upstream's runner does: polling the store would cap
// the rate at the poll's period times the pods in flight for every
// scheduler alike.
func (e *executor) steadyState(ctx context.Context, ns string, n int, d time.Duration, create func(i int) error) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	scheduled := make(chan string, n)
	handle, err := e.tracker.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { onScheduled(ctx, ns, nil, obj, scheduled) },
		UpdateFunc: func(oldObj, newObj any) {
			onScheduled(ctx, ns, oldObj, newObj, scheduled)
		},
	})
	if err != nil {
		return fmt.Errorf("watching the pods of %s: %w", ns, err)
	}
	defer func() { _ = e.tracker.informer.RemoveEventHandler(handle) }()
	deleted := map[string]bool{}
	next := n
	for {
		var name string
		select {
		case <-ctx.Done():
			return nil
		case name = <-scheduled:
		}
		if deleted[name] {
			continue
		}
		deleted[name] = true
		if err := e.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("deleting pod %s/%s: %w", ns, name, err)
		}
		if err := create(next); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		next++
	}
}

// onScheduled sends the name of a pod of ns that the event shows
// becoming scheduled, until ctx ends.
func onScheduled(ctx context.Context, ns string, oldObj, newObj any, out chan<- string) {
	pod, ok := newObj.(*v1.Pod)
	if !ok || pod.Namespace != ns || pod.Spec.NodeName == "" {
		return
	}
	if old, ok := oldObj.(*v1.Pod); ok && old.Spec.NodeName != "" {
		return
	}
	select {
	case <-ctx.Done():
	case out <- pod.Name:
	}
}
