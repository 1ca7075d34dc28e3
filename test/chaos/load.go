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

package chaos

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/test/podwatch"
)

// Load creates pods and gangs in one namespace and deletes them again,
// keeping up to MaxLive pods, until its context ends. A unit (a single
// pod or a whole gang) is deleted once it has lived Lifetime, whether it
// was scheduled or not; deletions wait while the Watcher is not live, so
// that the Watcher sees every bind before the pod goes.
type Load struct {
	// Client reaches the API server directly (not through the proxy).
	Client  kubernetes.Interface
	NS      string
	Watcher *podwatch.Watcher
	// PodCPU is the CPU request of every pod; memory is 64Mi.
	PodCPU string
	// GangSize is the size and the quorum of the gangs; every third unit
	// is a gang.
	GangSize int
	MaxLive  int
	Lifetime time.Duration
	// Interval is the pause between two steps (one creation or deletion
	// each).
	Interval time.Duration
	// Labels go on every Nth pod (LabelEvery > 0).
	Labels     map[string]string
	LabelEvery int

	mu       sync.Mutex
	units    []*unit
	labelled []string
	created  []types.UID
	next     int
	podsMade int
	errs     int
	deleted  int
}

type unit struct {
	gang    string
	names   []string
	born    time.Time
	podsNum int
}

// Run creates and deletes until ctx ends.
func (l *Load) Run(ctx context.Context) {
	for ctx.Err() == nil {
		l.step(ctx)
		podwatch.Pause(ctx, l.Interval)
	}
}

func (l *Load) step(ctx context.Context) {
	l.mu.Lock()
	live := 0
	var old *unit
	for _, u := range l.units {
		live += u.podsNum
		if old == nil && time.Since(u.born) > l.Lifetime {
			old = u
		}
	}
	l.mu.Unlock()
	if old != nil && l.Watcher.Live() {
		l.remove(ctx, old)
		return
	}
	if live+l.GangSize <= l.MaxLive {
		l.add(ctx, true)
	}
}

// add creates the next unit: every third one a gang if gangs is set.
func (l *Load) add(ctx context.Context, gangs bool) {
	l.mu.Lock()
	n := l.next
	l.next++
	l.mu.Unlock()
	u := &unit{born: time.Now()}
	size := 1
	if gangs && n%3 == 2 {
		size = l.GangSize
		u.gang = fmt.Sprintf("gang-%d", n)
	}
	for i := range size {
		name := fmt.Sprintf("pod-%d", n)
		if u.gang != "" {
			name = fmt.Sprintf("%s-%d", u.gang, i)
		}
		pod := l.pod(name, u.gang)
		created, err := l.Client.CoreV1().Pods(l.NS).Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			l.mu.Lock()
			l.errs++
			l.mu.Unlock()
			continue
		}
		u.names = append(u.names, name)
		l.mu.Lock()
		l.created = append(l.created, created.UID)
		l.mu.Unlock()
	}
	u.podsNum = len(u.names)
	if u.podsNum == 0 {
		return
	}
	l.mu.Lock()
	l.units = append(l.units, u)
	l.mu.Unlock()
}

func (l *Load) pod(name, gang string) *v1.Pod {
	l.mu.Lock()
	l.podsMade++
	labelled := l.LabelEvery > 0 && l.podsMade%l.LabelEvery == 0
	l.mu.Unlock()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: l.NS, Labels: map[string]string{"app": "chaos-load"}},
		Spec: v1.PodSpec{
			SchedulerName: "batch-scheduler",
			Containers: []v1.Container{{Name: "main", Image: "busybox", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
				v1.ResourceCPU: resource.MustParse(l.PodCPU), v1.ResourceMemory: resource.MustParse("64Mi")}}}},
		},
	}
	if gang != "" {
		pod.Annotations = map[string]string{framework.GroupNameAnnotation: gang, framework.MinAvailableAnnotation: strconv.Itoa(l.GangSize)}
	}
	if labelled {
		for k, v := range l.Labels {
			pod.Labels[k] = v
		}
		l.mu.Lock()
		l.labelled = append(l.labelled, l.NS+"/"+name)
		l.mu.Unlock()
	}
	return pod
}

// remove deletes u at once (no kubelet runs here to finish a graceful
// deletion).
func (l *Load) remove(ctx context.Context, u *unit) {
	if u.gang != "" {
		l.Watcher.Retire(u.gang)
	}
	zero := int64(0)
	for _, name := range u.names {
		err := l.Client.CoreV1().Pods(l.NS).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		if err != nil && !apierrors.IsNotFound(err) {
			l.mu.Lock()
			l.errs++
			l.mu.Unlock()
			// The API server may be down: try again on a later step.
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.deleted += u.podsNum
	for i, v := range l.units {
		if v == u {
			l.units = append(l.units[:i], l.units[i+1:]...)
			break
		}
	}
}

// Burst creates n single pods at once, outside the pace of Run; they
// are deleted as the others are.
func (l *Load) Burst(ctx context.Context, n int) {
	for range n {
		l.add(ctx, false)
	}
}

// Labelled returns the pods (namespace/name) that got Labels.
func (l *Load) Labelled() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.labelled...)
}

// Created returns the UIDs of every pod the load created.
func (l *Load) Created() []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]types.UID(nil), l.created...)
}

// LoadStats are the load's counters.
type LoadStats struct {
	Created, Deleted, Errors int
}

// Stats returns the load's counters.
func (l *Load) Stats() LoadStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return LoadStats{Created: len(l.created), Deleted: l.deleted, Errors: l.errs}
}
