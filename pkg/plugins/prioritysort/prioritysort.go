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

package prioritysort

import (
	"context"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
	"k8s.io/apimachinery/pkg/runtime"
)

// Name is the plugin's name in the registry and in profiles.
const Name = "PrioritySort"

// PrioritySort orders the active queue by priority, then FIFO.
type PrioritySort struct{}

var (
	_ framework.QueueSortPlugin   = &PrioritySort{}
	_ framework.EnqueueExtensions = &PrioritySort{}
)

// New is the plugin's framework.PluginFactory. It takes no args.
func New(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	if err := pluginutil.DecodeNoArgs(Name, args); err != nil {
		return nil, err
	}
	return &PrioritySort{}, nil
}

// Name implements framework.Plugin.
func (*PrioritySort) Name() string { return Name }

// Less implements framework.QueueSortPlugin: a higher Priority first, then
// an earlier Timestamp, then the JobID. It is the queue's own
// framework.DefaultLess, so the scheduler orders jobs the same way with or
// without a profile.
func (*PrioritySort) Less(a, b *framework.QueuedJob) bool {
	return framework.DefaultLess(a, b)
}

// EventsToRegister implements framework.EnqueueExtensions: none.
func (*PrioritySort) EventsToRegister() []framework.ClusterEventWithHint {
	return nil
}
