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

package defaultbinder

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "DefaultBinder"

// DefaultBinder binds pods through the API server.
type DefaultBinder struct {
	handle framework.Handle
}

var (
	_ framework.BindPlugin        = &DefaultBinder{}
	_ framework.EnqueueExtensions = &DefaultBinder{}
)

// New is the plugin's framework.PluginFactory. It takes no args and needs a
// Handle with a clientset.
func New(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New(Name + ": no framework handle")
	}
	return &DefaultBinder{handle: h}, nil
}

// Name implements framework.Plugin.
func (*DefaultBinder) Name() string { return Name }

// EventsToRegister implements framework.EnqueueExtensions: none.
func (*DefaultBinder) EventsToRegister() []framework.ClusterEventWithHint {
	return nil
}

// Bind implements framework.BindPlugin.
// A pod placed in room another job's reservation holds (it backfills,
// framework.BackfillOn) gets the binding's annotations that say whose
// and until when: the API server merges a binding's annotations into the
// pod.
func (b *DefaultBinder) Bind(ctx context.Context, state *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	logger := klog.FromContext(ctx)
	logger.V(3).Info("Binding pod", "pod", klog.KObj(pod), "node", nodeName)
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if bf, ok := framework.BackfillOn(state, nodeName); ok {
		binding.Annotations = bf.Annotations()
	}
	client := b.handle.ClientSet()
	if client == nil {
		return framework.AsStatus(fmt.Errorf("binding pod %s to node %s: no clientset", klog.KObj(pod), nodeName))
	}
	if err := client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(fmt.Errorf("binding pod %s to node %s: %w", klog.KObj(pod), nodeName, err))
	}
	return nil
}
