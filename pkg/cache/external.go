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

package cache

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// externalUsage is one entry of SetExternalUsage.
type externalUsage struct {
	node  string
	usage resources.Resource
}

// SetExternalUsage implements eventhandlers.ExternalUsageCache. Usage on a
// node the cache does not know is kept on a placeholder, as for pods; on a
// node outside the node selector, it is kept aside.
func (c *SchedulerCache) SetExternalUsage(key, nodeName string, usage resources.Resource) error {
	if key == "" {
		return errors.New("setting external usage: empty key")
	}
	if nodeName == "" {
		return fmt.Errorf("setting external usage %q: empty node name", key)
	}
	usage = usage.Clone()
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.external[key]; ok {
		if info, item := c.accountedNodeLocked(nodeName); old.node == nodeName && info != nil {
			info.External.Sub(old.usage)
			info.External.Add(usage)
			c.external[key] = externalUsage{node: nodeName, usage: usage}
			c.releaseNodeLocked(info, item)
			return nil
		}
		c.removeExternalLocked(key, old)
	}
	info, item := c.accountingNodeLocked(nodeName, usageOwner{key: key})
	c.external[key] = externalUsage{node: nodeName, usage: usage}
	info.External.Add(usage)
	// Copy on write: clones share the slice.
	keys := make([]string, 0, len(info.ExternalKeys)+1)
	keys = append(keys, info.ExternalKeys...)
	i, _ := slices.BinarySearch(keys, key)
	info.ExternalKeys = slices.Insert(keys, i, key)
	c.releaseNodeLocked(info, item)
	c.updateSizeGaugesLocked()
	return nil
}

// RemoveExternalUsage implements eventhandlers.ExternalUsageCache.
func (c *SchedulerCache) RemoveExternalUsage(key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old, ok := c.external[key]
	if !ok {
		return fmt.Errorf("removing external usage %q: %w", key, ErrNotFound)
	}
	c.removeExternalLocked(key, old)
	c.updateSizeGaugesLocked()
	return nil
}

// removeExternalLocked takes the usage old of key off its node, deleting
// the node if it is a placeholder left unused.
func (c *SchedulerCache) removeExternalLocked(key string, old externalUsage) {
	delete(c.external, key)
	info, item := c.accountedNodeLocked(old.node)
	if info == nil {
		klog.ErrorS(nil, "External usage missing from the node the cache accounted it to", "key", key, "node", old.node)
		return
	}
	info.External.Sub(old.usage)
	keys := slices.Clone(info.ExternalKeys)
	if i, found := slices.BinarySearch(keys, key); found {
		keys = slices.Delete(keys, i, i+1)
	}
	if len(keys) == 0 {
		keys = nil
		info.External = resources.Resource{}
	}
	info.ExternalKeys = keys
	c.releaseNodeLocked(info, item)
}
