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
	"fmt"
	"slices"
	"strings"
	"sync"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"

	configapi "github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/cache/informerhost"
	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
	frameworkruntime "github.com/batch-scheduler/batch-scheduler/pkg/framework/runtime"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins"
)

// handle is what plugins get from the framework: one for every profile.
type handle struct {
	client   kubernetes.Interface
	recorder events.EventRecorder
	// informers is the cache's native informer factory.
	informers informers.SharedInformerFactory
	// restConfig is what client was made from; nil in tests.
	restConfig *rest.Config

	// sharedMu guards shared, the values of framework.SharedStore.
	sharedMu sync.Mutex
	shared   map[string]any
}

var (
	_ framework.Handle             = (*handle)(nil)
	_ framework.RESTConfigProvider = (*handle)(nil)
	_ framework.SharedStore        = (*handle)(nil)
)

func (h *handle) ClientSet() kubernetes.Interface                        { return h.client }
func (h *handle) EventRecorder() events.EventRecorder                    { return h.recorder }
func (h *handle) SharedInformerFactory() informers.SharedInformerFactory { return h.informers }

// RESTConfig implements framework.RESTConfigProvider.
func (h *handle) RESTConfig() *rest.Config { return h.restConfig }

// Shared implements framework.SharedStore.
func (h *handle) Shared(key string, create func() (any, error)) (any, error) {
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	if v, ok := h.shared[key]; ok {
		return v, nil
	}
	v, err := create()
	if err != nil {
		return nil, err
	}
	if h.shared == nil {
		h.shared = map[string]any{}
	}
	h.shared[key] = v
	return v, nil
}

// buildProfiles builds one framework per --scheduler-name: the in-tree
// default profile, changed by the config file's profile of that name if
// there is one. Every profile in the file must name one of
// --scheduler-name, and all profiles must sort the queue with the same
// plugin, as there is one queue; queueSort is that plugin's Less, taken
// from the first name's profile.
func buildProfiles(ctx context.Context, names []string, cfg *config.File, reg *frameworkruntime.Registry, h framework.Handle, opts ...frameworkruntime.Option) (profiles map[string]*frameworkruntime.Framework, queueSort framework.LessFunc, err error) {
	byName := map[string]*configapi.Profile{}
	lines := map[string]frameworkruntime.LineFunc{}
	if cfg != nil {
		profiles := cfg.Profiles()
		for i := range profiles {
			p := &profiles[i]
			at := fmt.Sprintf("profiles[%d]", i)
			if !slices.Contains(names, p.SchedulerName) {
				return nil, nil, fmt.Errorf("%s: line %d: profile %q is not one of --scheduler-name (%s)", cfg.Path, cfg.Line(at), p.SchedulerName, strings.Join(names, ", "))
			}
			byName[p.SchedulerName] = p
			lines[p.SchedulerName] = func(field string) int {
				if field == "" {
					return cfg.Line(at)
				}
				return cfg.Line(at + "." + field)
			}
		}
	}
	out := make(map[string]*frameworkruntime.Framework, len(names))
	queueSortPlugin := ""
	for i, name := range names {
		spec, err := frameworkruntime.ResolveProfile(plugins.DefaultProfile(name), byName[name], lines[name])
		if err != nil {
			return nil, nil, fmt.Errorf("profile %q: %w", name, err)
		}
		fwk, err := frameworkruntime.NewFramework(ctx, reg, spec, h, opts...)
		if err != nil {
			return nil, nil, fmt.Errorf("profile %q: %w", name, err)
		}
		qs := strings.Join(spec.Plugins[frameworkruntime.QueueSortPoint].Names(), ",")
		if i == 0 {
			queueSortPlugin, queueSort = qs, fwk.QueueSortFunc()
		} else if qs != queueSortPlugin {
			return nil, nil, fmt.Errorf("profile %q sorts the queue with %s, profile %q with %s; all profiles share one queue and must use the same queueSort plugin",
				name, qs, names[0], queueSortPlugin)
		}
		out[name] = fwk
	}
	return out, queueSort, nil
}

// resourcesNeeded is the union of the resources the profiles' plugins
// registered events for. When any needs all (WildCard), the result is
// WildCard and the opt-in resources named (ResourceClaim, ...), which
// WildCard does not start.
func resourcesNeeded(profiles map[string]*frameworkruntime.Framework) []framework.EventResource {
	var out []framework.EventResource
	all := false
	for _, fwk := range profiles {
		for _, r := range fwk.ResourcesNeeded() {
			if r == framework.WildCard {
				all = true
			}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	if all {
		out = slices.DeleteFunc(out, func(r framework.EventResource) bool {
			return r != framework.WildCard && !informerhost.IsOptIn(r)
		})
	}
	slices.Sort(out)
	return out
}
