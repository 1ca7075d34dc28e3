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

package app

import (
	"context"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// errLostLeadership ends the process: a replica that lost its lease may
// have state that a new leader already contradicts, so it restarts clean.
var errLostLeadership = errors.New("lost the leader election lease")

// runElected runs lead while this process holds the lease, and returns
// errLostLeadership if the lease is lost before ctx ends. lead must return
// when its context is done. watchdog, if not nil, is attached to the
// elector so that health checks can see a leader that stopped renewing.
func runElected(ctx context.Context, o LeaderElectionOptions, client kubernetes.Interface, watchdog *leaderelection.HealthzAdaptor, lead func(context.Context)) error {
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("leader election: reading the hostname: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.ResourceNamespace, o.ResourceName,
		client.CoreV1(), client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return fmt.Errorf("leader election: creating the lease lock %s/%s: %w", o.ResourceNamespace, o.ResourceName, err)
	}
	// led closes when this replica starts leading, leadDone when lead
	// returns; Run does not wait for lead, so runElected does.
	led, leadDone := make(chan struct{}), make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            "batch-scheduler",
		WatchDog:        watchdog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				close(led)
				defer close(leadDone)
				klog.InfoS("Became the leader; scheduling", "lease", klog.KRef(o.ResourceNamespace, o.ResourceName), "identity", id)
				lead(ctx)
			},
			OnStoppedLeading: func() {
				klog.InfoS("Stopped leading", "lease", klog.KRef(o.ResourceNamespace, o.ResourceName), "identity", id)
			},
			OnNewLeader: func(identity string) {
				if identity != id {
					klog.InfoS("Another replica leads", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	klog.InfoS("Waiting for the leader election lease", "lease", klog.KRef(o.ResourceNamespace, o.ResourceName), "identity", id)
	elector.Run(ctx) // returns when ctx ends or the lease is lost
	select {
	case <-led:
		<-leadDone
		if ctx.Err() == nil {
			return errLostLeadership
		}
	default:
	}
	return nil
}
