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

// Package ledgertest is an in-memory pkg/ledger.Client for unit tests: it
// keeps NodeLedgers in a map and refuses an update whose resourceVersion
// is stale with a conflict, as the API server does.
package ledgertest

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
)

var gr = v1alpha1.Resource(v1alpha1.NodeLedgersResource)

// Client is the in-memory store. BeforeWrite, if set, runs before each
// write outside the store's lock, with the ledger about to be written: a
// test makes another placer write there. Set it before the client is
// used.
type Client struct {
	mu   sync.Mutex
	rv   int64
	objs map[string]*v1alpha1.NodeLedger

	// Writes and Conflicts count the writes tried and those refused.
	Writes, Conflicts atomic.Int64
	BeforeWrite       func(l *v1alpha1.NodeLedger)
}

// NewClient returns an empty store.
func NewClient() *Client { return &Client{objs: map[string]*v1alpha1.NodeLedger{}} }

// Get implements ledger.Client.
func (c *Client) Get(_ context.Context, name string, _ metav1.GetOptions) (*v1alpha1.NodeLedger, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objs[name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, name)
	}
	return o.DeepCopy(), nil
}

// Create implements ledger.Client.
func (c *Client) Create(_ context.Context, l *v1alpha1.NodeLedger, _ metav1.CreateOptions) (*v1alpha1.NodeLedger, error) {
	if c.BeforeWrite != nil {
		c.BeforeWrite(l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Writes.Add(1)
	if _, ok := c.objs[l.Name]; ok {
		c.Conflicts.Add(1)
		return nil, apierrors.NewAlreadyExists(gr, l.Name)
	}
	return c.storeLocked(l), nil
}

// Update implements ledger.Client.
func (c *Client) Update(_ context.Context, l *v1alpha1.NodeLedger, _ metav1.UpdateOptions) (*v1alpha1.NodeLedger, error) {
	if c.BeforeWrite != nil {
		c.BeforeWrite(l)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.Writes.Add(1)
	cur, ok := c.objs[l.Name]
	if !ok {
		return nil, apierrors.NewNotFound(gr, l.Name)
	}
	if cur.ResourceVersion != l.ResourceVersion {
		c.Conflicts.Add(1)
		return nil, apierrors.NewConflict(gr, l.Name, errors.New("the object has been modified"))
	}
	return c.storeLocked(l), nil
}

// Put stores l as another placer's write would, bypassing the version
// check.
func (c *Client) Put(l *v1alpha1.NodeLedger) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.storeLocked(l)
}

// Bump changes name's resourceVersion, as another placer's write would.
func (c *Client) Bump(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o, ok := c.objs[name]; ok {
		c.rv++
		o.ResourceVersion = strconv.FormatInt(c.rv, 10)
	}
}

func (c *Client) storeLocked(l *v1alpha1.NodeLedger) *v1alpha1.NodeLedger {
	c.rv++
	o := l.DeepCopy()
	o.ResourceVersion = strconv.FormatInt(c.rv, 10)
	c.objs[l.Name] = o
	return o.DeepCopy()
}
