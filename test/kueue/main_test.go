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

package kueue

import (
	"context"
	"fmt"
	"os"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/batch-scheduler/batch-scheduler/cmd/batch-scheduler/app"
	"github.com/batch-scheduler/batch-scheduler/test/controlplane"
)

var (
	cp     *controlplane.ControlPlane
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	kq     *kueueProcess
)

func TestMain(m *testing.M) {
	// batch-scheduler runs in this process and sets its logging up; do it
	// once, before any test goroutine logs.
	if err := app.ApplyLogging(); err != nil {
		fmt.Fprintln(os.Stderr, "applying the logging configuration:", err)
		os.Exit(1)
	}
	controlplane.RunTests("kueue", &cp, func() int {
		var err error
		if dyn, err = dynamic.NewForConfig(cp.Config); err != nil {
			fmt.Fprintln(os.Stderr, "kueue: creating a dynamic client:", err)
			return 1
		}
		disc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kueue: creating a discovery client:", err)
			return 1
		}
		mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
		if kq, err = startKueue(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, "kueue: starting Kueue:", err)
			return 1
		}
		code := m.Run()
		if !kq.running() {
			fmt.Fprintf(os.Stderr, "kueue: Kueue exited during the tests; its log %s ends with:\n%s\n", kq.logPath, controlplane.Tail(kq.logPath, 40))
			code = max(code, 1)
		}
		kq.stop()
		if code != 0 {
			fmt.Fprintf(os.Stderr, "kueue: Kueue's log is %s; it ends with:\n%s\n", kq.logPath, controlplane.Tail(kq.logPath, 40))
		} else {
			_ = os.RemoveAll(kq.dir)
		}
		return code
	},
		// The API server calls Kueue's webhooks through their Service, as
		// in a cluster; without kube-proxy it must route to the Service's
		// endpoint rather than to its cluster IP.
		controlplane.WithAPIServerFlag("enable-aggregator-routing", "true"))
}
