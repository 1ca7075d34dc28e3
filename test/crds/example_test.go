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

package crds

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/clientset/versioned"
	"github.com/batch-scheduler/batch-scheduler/pkg/generated/informers/externalversions"
)

// The typed clientset, an informer and its lister against an API server
// that serves the CRDs in deploy/crds. docs/external-resource-managers.md
// shows this code; it is compiled here (not run: it needs a cluster).
func Example_typedClient() {
	ctx := context.Background()
	run := func(kubeconfig string) error {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
		}
		client, err := versioned.NewForConfig(cfg)
		if err != nil {
			return fmt.Errorf("creating the batch-scheduler.io client: %w", err)
		}

		// The API server checks what ValidateExternalWorkload checks.
		vm := &v1alpha1.ExternalWorkload{
			ObjectMeta: metav1.ObjectMeta{Name: "vm-1"},
			Spec: v1alpha1.ExternalWorkloadSpec{
				NodeName:     "node-a",
				WorkloadKind: "vm",
				Resources:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
			},
		}
		if _, err := client.BatchSchedulerV1alpha1().ExternalWorkloads().Create(ctx, vm, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating ExternalWorkload %s: %w", vm.Name, err)
		}

		factory := externalversions.NewSharedInformerFactory(client, 0)
		workloads := factory.BatchScheduler().V1alpha1().ExternalWorkloads()
		if _, err := workloads.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) {
				klog.InfoS("External workload added", "workload", klog.KObj(obj.(*v1alpha1.ExternalWorkload)))
			},
		}); err != nil {
			return err
		}
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		all, err := workloads.Lister().List(labels.Everything())
		if err != nil {
			return err
		}
		klog.InfoS("Listed external workloads", "count", len(all))
		return nil
	}
	if err := run("kubeconfig"); err != nil {
		klog.ErrorS(err, "Typed client example")
	}
}
