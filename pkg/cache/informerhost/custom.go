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

package informerhost

import (
	"errors"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// CustomInformer is an informer the cache runs beside its native ones,
// for objects that do not come from the API server's usual resources: for
// example hosts known only to an external manager, delivered as Nodes.
type CustomInformer struct {
	// Name identifies the informer in logs and in the sync barrier, as
	// "custom/<Name>".
	Name string
	// Resource says which handler methods receive the informer's events,
	// exactly as for the native informer of that resource: Node events go
	// to the NodeEventHandler methods (behind Options.NodeSelector), Pod
	// events to the pod methods (behind the same responsibility filter),
	// a "<plural>.<version>.<group>" resource to the DynamicEventHandler
	// methods, and Grant and ExternalWorkload to the optional
	// GrantEventHandler and ExternalWorkloadEventHandler methods (Run fails
	// if the handler does not implement the interface).
	Resource framework.EventResource
	// Informer is started by Run, with Run's context; it must not be
	// started by anyone else before.
	Informer toolscache.SharedIndexInformer
	// ListerWatcher, when set, is the informer's source: the consistency
	// checker (Verify) lists it to compare the cache with a fresh list.
	// When nil, the checker compares with the informer's own store, which
	// finds what the cache lost but not what the informer missed.
	ListerWatcher toolscache.ListerWatcher
}

// AddCustomInformer adds ci to the informers Run starts. It must be called
// before Run; names must be unique, and ci.Resource must have handler
// methods.
func (c *Host) AddCustomInformer(ci CustomInformer) error {
	if ci.Name == "" {
		return errors.New("adding custom informer: empty name")
	}
	if ci.Informer == nil {
		return fmt.Errorf("adding custom informer %q: nil informer", ci.Name)
	}
	if err := CheckResource(ci.Resource); err != nil {
		return fmt.Errorf("adding custom informer %q: %w", ci.Name, err)
	}
	c.runMu.Lock()
	defer c.runMu.Unlock()
	if c.started {
		return fmt.Errorf("adding custom informer %q: the cache is already running", ci.Name)
	}
	for _, other := range c.customInformers {
		if other.Name == ci.Name {
			return fmt.Errorf("adding custom informer %q: a custom informer with that name was added already", ci.Name)
		}
	}
	c.customInformers = append(c.customInformers, ci)
	return nil
}
