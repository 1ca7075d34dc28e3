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

package debugger

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/batch-scheduler/batch-scheduler/pkg/cache"
)

// Kinds of Difference.
const (
	DiffNode             = "Node"
	DiffPod              = "Pod"
	DiffExternalWorkload = "ExternalWorkload"
	DiffJob              = "Job"
	DiffQueue            = "Queue"
	DiffAccounting       = "Accounting"
	DiffCap              = "Cap"
)

// Defaults of VerifyOptions.
const (
	DefaultVerifyGrace          = 250 * time.Millisecond
	DefaultVerifyRechecks       = 5
	DefaultVerifyMaxDifferences = 1000
	DefaultVerifyPageSize       = 500
	DefaultVerifyMaxTargeted    = 50
)

// VerifyOptions configure Verify. The zero value uses the defaults.
type VerifyOptions struct {
	// Client lists the truth from the API server. Default: Options.Client.
	Client kubernetes.Interface
	// Grace is the wait before the first re-check of candidate
	// differences; each further re-check waits twice as long as the one
	// before. Default: DefaultVerifyGrace (250ms).
	Grace time.Duration
	// Rechecks is how many times a candidate difference is checked again
	// against fresh sources and a fresh copy of the cache before it is
	// reported; it is reported only if every re-check still finds it.
	// Default: 5 (0.25+0.5+1+2+4 s: at most 7.75 s of waiting). Negative:
	// none (report what the first comparison finds; for tests).
	Rechecks int
	// MaxDifferences bounds the differences a result lists; the rest are
	// counted in VerifyResult.Truncated. Default: 1000.
	MaxDifferences int
	// PageSize is the page size of the lists from the API server.
	// Default: 500.
	PageSize int64
	// MaxTargeted bounds the requests (GETs of single objects, lists of a
	// namespace's or a node's pods) a re-check makes for its candidates;
	// when more would be needed it lists everything again. Default: 50.
	MaxTargeted int
	// ExternalWorkloadNodeLabel is the label whose value, when set and
	// not empty, names an ExternalWorkload's node instead of its
	// spec.nodeName, as the default event handler's
	// externalWorkloadNodeLabel argument does.
	ExternalWorkloadNodeLabel string

	// beforeRecheck, when set, is called before each re-check's wait
	// (tests: to settle an event in flight).
	beforeRecheck func(round int)
	// alterView, when set, changes every copy of the cache the run takes
	// (tests: to corrupt the cache's state without reaching into it).
	alterView func(*cache.View)
}

func (o VerifyOptions) withDefaults(c *cache.SchedulerCache) VerifyOptions {
	if o.Client == nil {
		o.Client = c.Options().Client
	}
	if o.Grace <= 0 {
		o.Grace = DefaultVerifyGrace
	}
	switch {
	case o.Rechecks == 0:
		o.Rechecks = DefaultVerifyRechecks
	case o.Rechecks < 0:
		o.Rechecks = 0
	}
	if o.MaxDifferences <= 0 {
		o.MaxDifferences = DefaultVerifyMaxDifferences
	}
	if o.PageSize <= 0 {
		o.PageSize = DefaultVerifyPageSize
	}
	if o.MaxTargeted <= 0 {
		o.MaxTargeted = DefaultVerifyMaxTargeted
	}
	return o
}

// VerifyResult is the outcome of one run of the consistency checker, as
// /debug/cache/verify serves it.
type VerifyResult struct {
	StartedAt       time.Time `json:"startedAt"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Consistent: no difference persisted.
	Consistent bool         `json:"consistent"`
	Counts     VerifyCounts `json:"counts"`
	// Differences are those that persisted through every re-check,
	// sorted by kind, name and field, at most VerifyOptions.MaxDifferences.
	Differences []Difference `json:"differences"`
	// Truncated counts the differences left out of Differences.
	Truncated int `json:"truncated,omitempty"`
	// Rechecks is how many re-checks ran; InFlight counts the candidate
	// differences they cleared (events in flight when the first
	// comparison ran).
	Rechecks int `json:"rechecks"`
	InFlight int `json:"inFlight"`
	// LongestLockHoldSeconds is the longest time the run held the
	// cache's lock (or the queue's) in one go.
	LongestLockHoldSeconds float64 `json:"longestLockHoldSeconds"`

	// byKind counts the differences, truncated ones included, by kind.
	byKind map[string]int
}

// VerifyCounts says how much was compared: the objects of the sources
// (nodes, pods, external workloads), and the cache's jobs and queued jobs.
type VerifyCounts struct {
	Nodes             int `json:"nodes"`
	Pods              int `json:"pods"`
	ExternalWorkloads int `json:"externalWorkloads"`
	Jobs              int `json:"jobs"`
	QueuedJobs        int `json:"queuedJobs"`
	// CustomSources are the custom informers listed.
	CustomSources int `json:"customSources"`
}

// Difference is one way the cache disagrees with its sources (or with
// itself). Name is "namespace/name" for a pod, the node name for Node,
// Accounting and Cap, the key for an ExternalWorkload
// ("externalworkload/<name>") and the job ID for Job and Queue.
type Difference struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Field   string `json:"field"`
	Cache   string `json:"cache"`
	Truth   string `json:"truth"`
	Message string `json:"message"`

	// subject says what to fetch again to re-check it.
	subject subject
}

func (d Difference) id() string { return d.Kind + "\x00" + d.Name + "\x00" + d.Field }

// String gives the difference on one line, as the logs and tests show it.
func (d Difference) String() string {
	return fmt.Sprintf("%s %s %s: cache %q, truth %q (%s)", d.Kind, d.Name, d.Field, d.Cache, d.Truth, d.Message)
}

// ErrVerifyList wraps the error of a list from a source that Verify could
// not complete.
var ErrVerifyList = errors.New("listing the truth for the cache consistency check")

// Verify compares the cache with fresh lists of its sources: the API
// server's nodes and pods, and every custom informer's objects (listed
// with CustomInformer.ListerWatcher, or taken from the informer's own
// store when it has none). Candidate differences are re-checked, after a
// grace period that doubles each time, against fresh reads of the objects
// concerned and a fresh copy of the cache; only those that every re-check
// still finds are reported (see docs/debugging.md). It copies the cache
// in short sections of its lock and never holds it while it lists or
// compares. It fails when a source cannot be listed (wrapping
// ErrVerifyList) or ctx ends; metrics count every run.
func Verify(ctx context.Context, c *cache.SchedulerCache, opts VerifyOptions) (*VerifyResult, error) {
	opts = opts.withDefaults(c)
	start := time.Now()
	res, err := verify(ctx, c, opts, start)
	m := c.Metrics()
	m.CacheVerifyRuns.Inc()
	m.CacheVerifyDuration.Observe(time.Since(start).Seconds())
	if err != nil {
		return nil, err
	}
	for kind, n := range res.byKind {
		m.CacheVerifyDifferences.WithLabelValues(kind).Add(float64(n))
	}
	return res, nil
}

func verify(ctx context.Context, c *cache.SchedulerCache, opts VerifyOptions, start time.Time) (*VerifyResult, error) {
	if opts.Client == nil {
		return nil, fmt.Errorf("%w: no API server client", ErrVerifyList)
	}
	v := &verifier{c: c, opts: opts, rules: c.StateRules()}
	tr, err := v.listAll(ctx)
	if err != nil {
		return nil, err
	}
	cv := v.view()
	diffs := v.compare(tr, cv)
	res := &VerifyResult{StartedAt: start.UTC(), Counts: v.counts(tr, cv)}

	delay := opts.Grace
	for round := 0; round < opts.Rechecks && len(diffs) > 0; round++ {
		if opts.beforeRecheck != nil {
			opts.beforeRecheck(round)
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("cache consistency check interrupted during its re-checks: %w", context.Cause(ctx))
		case <-timer.C:
		}
		delay *= 2
		res.Rechecks++
		if err := v.refresh(ctx, tr, diffs); err != nil {
			return nil, err
		}
		cv = v.view()
		still := map[string]Difference{}
		for _, d := range v.compare(tr, cv) {
			still[d.id()] = d
		}
		kept := diffs[:0]
		for _, d := range diffs {
			if nd, ok := still[d.id()]; ok {
				kept = append(kept, nd)
			} else {
				res.InFlight++
			}
		}
		diffs = kept
	}

	sort.Slice(diffs, func(i, j int) bool {
		a, b := diffs[i], diffs[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Field < b.Field
	})
	res.byKind = map[string]int{}
	for _, d := range diffs {
		res.byKind[d.Kind]++
	}
	if len(diffs) > opts.MaxDifferences {
		res.Truncated = len(diffs) - opts.MaxDifferences
		diffs = diffs[:opts.MaxDifferences]
	}
	res.Differences = append([]Difference{}, diffs...)
	res.Consistent = len(res.Differences) == 0
	res.DurationSeconds = time.Since(start).Seconds()
	res.LongestLockHoldSeconds = v.longestHold.Seconds()
	return res, nil
}

// maxLoggedDifferences bounds the differences LogVerifyResult logs one by
// one.
const maxLoggedDifferences = 100

// LogVerifyResult logs res: a summary line, then one line per difference
// (at most 100; a last line says how many were left out). A consistent
// result logs at info level, differences at error level.
func LogVerifyResult(res *VerifyResult) {
	if res.Consistent {
		klog.InfoS("Scheduler cache is consistent with its sources", "nodes", res.Counts.Nodes, "pods", res.Counts.Pods,
			"externalWorkloads", res.Counts.ExternalWorkloads, "jobs", res.Counts.Jobs, "queuedJobs", res.Counts.QueuedJobs,
			"inFlight", res.InFlight, "rechecks", res.Rechecks, "duration", time.Duration(res.DurationSeconds*float64(time.Second)))
		return
	}
	total := len(res.Differences) + res.Truncated
	klog.ErrorS(nil, "Scheduler cache differs from its sources", "differences", total, "nodes", res.Counts.Nodes, "pods", res.Counts.Pods,
		"externalWorkloads", res.Counts.ExternalWorkloads, "jobs", res.Counts.Jobs, "queuedJobs", res.Counts.QueuedJobs,
		"inFlight", res.InFlight, "rechecks", res.Rechecks, "duration", time.Duration(res.DurationSeconds*float64(time.Second)))
	for i, d := range res.Differences {
		if i == maxLoggedDifferences {
			break
		}
		klog.ErrorS(nil, "Scheduler cache difference", "kind", d.Kind, "name", d.Name, "field", d.Field,
			"cache", d.Cache, "truth", d.Truth, "message", d.Message)
	}
	if left := total - min(len(res.Differences), maxLoggedDifferences); left > 0 {
		klog.ErrorS(nil, "More scheduler cache differences not logged; see /debug/cache/verify", "notLogged", left)
	}
}
