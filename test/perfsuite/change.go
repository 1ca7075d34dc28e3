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
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
)

// The operations that change or wait on what the others created.

// updateAny replaces each object of its name with the rendered one (an
// unconditional update: fields the template leaves out are cleared), at
// most UpdatePerSecond a second, as upstream does.
func (e *executor) updateAny(ctx context.Context, op *Op) error {
	ns, err := op.namespace()
	if err != nil {
		return err
	}
	n, params, err := e.countAndParams(op, 1)
	if err != nil {
		return err
	}
	var gap time.Duration
	if op.UpdatePerSecond > 0 {
		gap = time.Second / time.Duration(op.UpdatePerSecond)
	}
	for i := 0; i < n; i++ {
		obj, res, err := e.object(e.path(op.TemplatePath), params, i, n, ns)
		if err != nil {
			return err
		}
		opts := metav1.UpdateOptions{FieldValidation: "Strict"}
		if _, err := res.Update(ctx, obj, opts, op.Subresources...); err != nil {
			return fmt.Errorf("updating %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		// The object's status is written too, as upstream's runner does:
		// an update of the object itself drops it (a node's capacity,
		// say).
		if _, err := res.UpdateStatus(ctx, obj, opts); err != nil {
			return fmt.Errorf("updating the status of %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
		if gap > 0 {
			time.Sleep(gap)
		}
	}
	return nil
}

func (e *executor) barrier(ctx context.Context, op *Op) error {
	scope := newScope(op.Namespaces, op.LabelSelector)
	what := "pods scheduled"
	done := func(sc, _, all int) bool { return sc == all }
	if strings.EqualFold(op.StageRequirement, "Attempted") {
		what, done = "pods attempted", func(_, at, all int) bool { return at == all }
	}
	return e.tracker.waitFor(ctx, scope, e.timeout, "barrier: "+what, done)
}

func (e *executor) deletePods(ctx context.Context, op *Op) error {
	ns, err := op.namespace()
	if err != nil {
		return err
	}
	sel := labels.SelectorFromSet(op.LabelSelector).String()
	pods, err := e.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("listing pods of %s to delete: %w", ns, err)
	}
	var gap time.Duration
	if op.DeletePodsPerSecond > 0 {
		gap = time.Second / time.Duration(op.DeletePodsPerSecond)
	}
	del := func() error {
		for _, p := range pods.Items {
			if err := e.client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting pod %s/%s: %w", ns, p.Name, err)
			}
			if gap > 0 {
				time.Sleep(gap)
			}
		}
		return nil
	}
	if op.SkipWaitToCompletion {
		e.bg.Add(1)
		go func() {
			defer e.bg.Done()
			_ = del() // the workload's end cancels it
		}()
		return nil
	}
	return del()
}

// churn creates (and in recreate mode deletes) objects of its templates
// every interval until the workload ends.
func (e *executor) churn(ctx context.Context, opIndex int, op *Op) error {
	ns, err := op.namespace()
	if err != nil {
		return err
	}
	if ns == "" {
		ns = fmt.Sprintf("namespace-%d", opIndex)
	}
	if err := e.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	interval := time.Duration(op.IntervalMilliseconds) * time.Millisecond
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	if op.Mode != "create" && op.Mode != "recreate" || op.Mode == "recreate" && op.Number <= 0 {
		return fmt.Errorf("churn mode %q with number %d", op.Mode, op.Number)
	}
	// Each template's objects, oldest first (recreate mode).
	made := make([][]*unstructured.Unstructured, len(op.TemplatePaths))
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for count := 0; op.Mode == "recreate" || op.Number == 0 || count < op.Number; count++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for t, path := range op.TemplatePaths {
				obj, res, err := e.object(e.path(path), nil, count, 0, ns)
				if err != nil {
					return
				}
				if op.Mode == "recreate" && len(made[t]) >= op.Number {
					old := made[t][0]
					made[t] = made[t][1:]
					_ = res.Delete(ctx, old.GetName(), metav1.DeleteOptions{})
				}
				created, err := res.Create(ctx, obj, metav1.CreateOptions{})
				if err == nil {
					made[t] = append(made[t], created)
				}
			}
		}
	}()
	return nil
}
