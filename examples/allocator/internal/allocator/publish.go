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

package allocator

import (
	"errors"
	"sort"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/drf"
	"github.com/batch-scheduler/batch-scheduler/examples/allocator/internal/held"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/batchscheduler/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/resources"
)

// zeroMessage is the status message of a zero version: a grant that gives
// nothing, kept until its framework acknowledges it.
const zeroMessage = "nothing granted; deleted once the framework acknowledges this version"

// grantName is the name of framework's grant on node.
func grantName(k drf.Key) string { return k.Framework + "." + k.Node }

// keyOf is the framework and node of g.
func keyOf(g *v1alpha1.Grant) drf.Key {
	return drf.Key{Framework: g.Spec.Framework, Node: g.Spec.NodeName}
}

// valueOf is what g lets its framework occupy: its resources while
// Active, nothing otherwise.
func valueOf(g *v1alpha1.Grant) resources.Resource {
	if g.Status.Phase != v1alpha1.GrantActive {
		return resources.Resource{}
	}
	return resources.FromList(g.Spec.Resources)
}

// publish brings the store as close to res as what frameworks hold
// allows (holding is held(f, n) before this round):
//
//   - A grant res wants is published Active with res's resources, except
//     that it never rises into capacity another framework holds
//     (held.Clamp, frameworks in name order on each node). The rest of
//     the grow is published in a later round, once acknowledgments free
//     the room.
//   - A revoked grant stays published as Revoked with its last resources.
//   - A grant res no longer wants gets a zero version (Active, empty
//     resources) and is deleted only once its framework may believe no
//     non-zero version of it. A grant known only from the state file gets
//     a zero version too, so that its framework can acknowledge it.
//   - Write-ahead: before publishing a version above what the state file
//     counts as held for its grant, the file is saved with what frameworks
//     hold after this round; if that fails, such versions wait.
//   - Deletions come first, then grants that do not grow, then those that
//     do, each in name order; if anything of the first two failed, nothing
//     grows this round. Grants whose expiry is near are renewed.
func (a *Allocator) publish(in drf.Input, res drf.Result, revoked map[drf.Key]string, holding map[drf.Key]resources.Resource) {
	now := in.Now
	alloc := map[string]resources.Resource{}
	for _, n := range in.Nodes {
		alloc[n.Name] = n.Allocatable
	}
	fwNames := map[string]bool{}
	for _, f := range in.Frameworks {
		fwNames[f.Name] = true
	}
	desired := map[string]*v1alpha1.Grant{}
	for k, g := range res.Grants {
		desired[grantName(k)] = a.newGrant(k, g.Resources.ToList(), v1alpha1.GrantActive, "")
	}
	for k, msg := range revoked {
		if _, ok := alloc[k.Node]; !ok || !fwNames[k.Framework] {
			continue
		}
		var last v1.ResourceList
		if p := a.published[grantName(k)]; p != nil {
			last = p.Spec.Resources
		}
		if msg == "" {
			msg = "revoked by an administrator"
		}
		desired[grantName(k)] = a.newGrant(k, last, v1alpha1.GrantRevoked, msg)
	}
	// Grants nobody wants any more: a zero version while the framework
	// may believe more, deletion once it believes nothing.
	known := map[string]drf.Key{}
	for name, g := range a.published {
		known[name] = keyOf(g)
	}
	for _, k := range a.ledger.Keys() {
		known[grantName(k)] = k
	}
	var stale []string
	for name, k := range known {
		if desired[name] != nil {
			continue
		}
		if a.ledger.Believed(k, now).IsZero() {
			if a.published[name] != nil {
				stale = append(stale, name)
			} else {
				a.ledger.Forget(k)
			}
			continue
		}
		desired[name] = a.newGrant(k, v1.ResourceList{}, v1alpha1.GrantActive, zeroMessage)
	}
	next := a.clamp(desired, alloc, holding, now)
	skip := a.writeAhead(desired, next)

	// No grow uses room a shrink of this round frees (clamp), but watchers
	// still see deletions and shrinks first: they never see a node's
	// grants sum above it in between.
	sort.Strings(stale)
	shrinkFailed := false
	for _, name := range stale {
		k := keyOf(a.published[name])
		if err := a.store.Delete("", name); err != nil && !apierrors.IsNotFound(err) {
			klog.ErrorS(err, "Deleting a grant failed", "grant", name)
			shrinkFailed = true
			continue
		}
		klog.V(2).InfoS("Grant deleted: its framework believes no version of it gives anything", "grant", name)
		delete(a.published, name)
		a.ledger.Forget(k)
	}
	var keep, grow []string
	for name, want := range desired {
		if skip[name] {
			continue
		}
		cur := a.published[name]
		activated := cur != nil && cur.Status.Phase != v1alpha1.GrantActive && want.Status.Phase == v1alpha1.GrantActive
		if cur == nil || activated || grows(cur.Spec.Resources, want.Spec.Resources) {
			grow = append(grow, name)
		} else {
			keep = append(keep, name)
		}
	}
	sort.Strings(keep)
	sort.Strings(grow)
	for _, name := range keep {
		if !a.apply(name, desired[name], now) {
			shrinkFailed = true
		}
	}
	if shrinkFailed && len(grow) > 0 {
		klog.InfoS("Not growing grants this round: a grant could not be shrunk or deleted", "grants", len(grow))
		grow = nil
	}
	for _, name := range grow {
		a.apply(name, desired[name], now)
	}
	a.metrics.grants.Set(float64(len(a.published)))
}

// clamp lowers the Active grants of desired where they would rise into
// capacity another framework holds, drops creations left with nothing to
// give, and returns what each framework will hold on each node once
// desired is published.
func (a *Allocator) clamp(desired map[string]*v1alpha1.Grant, alloc map[string]resources.Resource,
	holding map[drf.Key]resources.Resource, now time.Time) map[drf.Key]resources.Resource {
	claims := map[string][]held.Claim{}
	names := map[string][]string{} // per node, the grant of each claim; "" for held only
	for name, g := range desired {
		k := keyOf(g)
		claims[k.Node] = append(claims[k.Node], held.Claim{Framework: k.Framework, Held: holding[k], Want: valueOf(g)})
		names[k.Node] = append(names[k.Node], name)
	}
	for k, h := range holding {
		if desired[grantName(k)] == nil {
			claims[k.Node] = append(claims[k.Node], held.Claim{Framework: k.Framework, Held: h})
			names[k.Node] = append(names[k.Node], "")
		}
	}
	next := map[drf.Key]resources.Resource{}
	for node, cs := range claims {
		allowed := held.Clamp(alloc[node], cs)
		for i, c := range cs {
			k := drf.Key{Framework: c.Framework, Node: node}
			next[k] = held.Max(c.Held, allowed[i])
			name := names[node][i]
			if name == "" || !held.Exceeds(c.Want, allowed[i]) {
				continue
			}
			g := desired[name] // Active: the others want nothing
			g.Spec.Resources = allowed[i].ToList()
			a.metrics.growsDeferred.WithLabelValues(c.Framework).Inc()
			klog.V(2).InfoS("Grant grow deferred: other frameworks still hold the capacity",
				"grant", name, "wanted", c.Want, "publishing", allowed[i], "held", c.Held)
			if a.published[name] == nil && allowed[i].IsZero() && a.ledger.Believed(k, now).IsZero() {
				delete(desired, name) // nothing to create
			}
		}
	}
	return next
}

// writeAhead saves the state file, with next as the held capacity, before
// any version of desired whose value is above what the file counts as
// held for its grant is published. It returns the grants that must not be
// published this round because the save failed.
func (a *Allocator) writeAhead(desired map[string]*v1alpha1.Grant, next map[drf.Key]resources.Resource) map[string]bool {
	if a.opts.StateFile == "" {
		return nil
	}
	// persisted is written only by this goroutine: reading it unlocked is safe.
	var raising []string
	for name, g := range desired {
		if held.Exceeds(valueOf(g), a.persisted[keyOf(g)]) {
			raising = append(raising, name)
		}
	}
	if len(raising) == 0 {
		return nil
	}
	h := map[drf.Key]resources.Resource{}
	for k, v := range next {
		if !v.IsZero() {
			h[k] = v
		}
	}
	err := a.saveHeld(h)
	if err == nil {
		return nil
	}
	sort.Strings(raising)
	klog.ErrorS(err, "Saving the state file before growing grants failed; they wait for the next round",
		"stateFile", a.opts.StateFile, "grants", raising)
	skip := map[string]bool{}
	for _, name := range raising {
		skip[name] = true
	}
	return skip
}

// carried is drf's carry-over for the next round: each Active grant with
// resources, as published (a clamped grow, or a write that failed, leaves
// it below or above what drf wanted), and since when it has been partly
// idle.
func (a *Allocator) carried(in drf.Input, res drf.Result, used map[drf.Key]resources.Resource) map[drf.Key]drf.Grant {
	out := map[drf.Key]drf.Grant{}
	for _, g := range a.published {
		v := valueOf(g)
		if v.IsZero() {
			continue
		}
		k := keyOf(g)
		c := drf.Grant{Resources: v}
		want, wanted := res.Grants[k]
		r := in.Reports[k.Framework]
		switch {
		case wanted && !held.Exceeds(v, want.Resources) && !held.Exceeds(want.Resources, v):
			c.IdleSince = want.IdleSince
		case in.Unreadable[k.Framework]:
			c.IdleSince = in.Previous[k].IdleSince
		case r != nil && r.Synced && held.Exceeds(v, used[k]):
			for _, t := range []time.Time{want.IdleSince, in.Previous[k].IdleSince, in.Now} {
				if !t.IsZero() {
					c.IdleSince = t
					break
				}
			}
		}
		out[k] = c
	}
	return out
}

// apply creates or updates the grant name to want, if it changed or is
// due for renewal, records the version in the ledger, and reports whether
// the store has it as wanted.
func (a *Allocator) apply(name string, want *v1alpha1.Grant, now time.Time) bool {
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		klog.ErrorS(errors.New(msgs[0]), "Grant name is not a valid object name; not published", "grant", name)
		return false
	}
	if errs := v1alpha1.ValidateGrant(want); len(errs) > 0 {
		klog.ErrorS(errs.ToAggregate(), "Invalid grant; not published", "grant", name)
		return false
	}
	cur := a.published[name]
	if cur == nil {
		a.setExpiry(want, now)
		if err := a.store.Create(want); err != nil {
			klog.ErrorS(err, "Publishing a grant failed", "grant", name)
			return false
		}
		klog.V(2).InfoS("Grant published", "grant", name, "resources", resources.FromList(want.Spec.Resources),
			"phase", want.Status.Phase, "resourceVersion", want.ResourceVersion)
		a.published[name] = want
		a.recordVersion(want)
		return true
	}
	same := equality.Semantic.DeepEqual(cur.Spec.Resources, want.Spec.Resources) && cur.Status == want.Status
	if same && !a.renewDue(cur, now) {
		return true
	}
	a.setExpiry(want, now)
	if err := a.store.Update(want); err != nil {
		klog.ErrorS(err, "Updating a grant failed", "grant", name)
		return false
	}
	if !same {
		klog.V(2).InfoS("Grant updated", "grant", name, "resources", resources.FromList(want.Spec.Resources),
			"phase", want.Status.Phase, "resourceVersion", want.ResourceVersion)
	}
	a.published[name] = want
	a.recordVersion(want)
	return true
}

// recordVersion adds the version of g just written to the ledger.
func (a *Allocator) recordVersion(g *v1alpha1.Grant) {
	rv, err := strconv.ParseInt(g.ResourceVersion, 10, 64)
	if err != nil {
		// The store's versions are integers; should this ever fail, the
		// version is not recorded and the framework's ack of it finds
		// the previous one as floor, which only holds more.
		klog.ErrorS(err, "Grant resourceVersion is not an integer", "grant", g.Name, "resourceVersion", g.ResourceVersion)
		return
	}
	v := held.Version{ResourceVersion: rv, Value: valueOf(g)}
	if g.Spec.ExpiresAt != nil {
		v.ExpiresAt = g.Spec.ExpiresAt.Time
	}
	a.ledger.Publish(keyOf(g), v)
}

// grows reports whether want asks for more of some resource than cur.
func grows(cur, want v1.ResourceList) bool {
	for name, q := range want {
		if c, ok := cur[name]; !ok || q.Cmp(c) > 0 {
			if ok || !q.IsZero() {
				return true
			}
		}
	}
	return false
}

func (a *Allocator) newGrant(k drf.Key, rl v1.ResourceList, phase v1alpha1.GrantPhase, msg string) *v1alpha1.Grant {
	if rl == nil {
		rl = v1.ResourceList{}
	}
	return &v1alpha1.Grant{
		ObjectMeta: metav1.ObjectMeta{Name: grantName(k)},
		Spec: v1alpha1.GrantSpec{
			Framework: k.Framework,
			NodeName:  k.Node,
			Resources: rl,
			Issuer:    a.opts.Name,
		},
		Status: v1alpha1.GrantStatus{Phase: phase, Message: msg},
	}
}

// renewDue reports whether cur's expiry is less than half a TTL away.
func (a *Allocator) renewDue(cur *v1alpha1.Grant, now time.Time) bool {
	if a.opts.GrantTTL <= 0 || cur.Spec.ExpiresAt == nil {
		return false
	}
	return cur.Spec.ExpiresAt.Sub(now) < a.opts.GrantTTL/2
}

// setExpiry sets want's expiry to a full TTL from now (when a TTL is set).
func (a *Allocator) setExpiry(want *v1alpha1.Grant, now time.Time) {
	if a.opts.GrantTTL > 0 {
		t := metav1.NewTime(now.Add(a.opts.GrantTTL))
		want.Spec.ExpiresAt = &t
	}
}
