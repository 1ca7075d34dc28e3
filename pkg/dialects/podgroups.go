package dialects

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The policies of the PodGroups of the gang dialects: the native,
// scheduler-plugins and Volcano PodGroups (the batch/v1 Job's is in
// owners.go). See docs/scheduling.md, "Gang dialects".

// source names a group object for messages: "<kind> <namespace>/<name>".
func source(kind framework.GroupKind, u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s %s/%s", kind, u.GetNamespace(), u.GetName())
}

// nativePolicy reads spec.schedulingPolicy of a scheduling.k8s.io PodGroup:
// gang.minCount is the quorum; a basic policy is a group of one.
func nativePolicy(u *unstructured.Unstructured) *framework.GroupPolicy {
	p := &framework.GroupPolicy{Source: source(framework.GroupKindNative, u)}
	p.Topology, p.Err = nativeTopology(u, p.Source)
	if p.Err != nil {
		return p
	}
	if n, found, err := IntField(u.Object, "", "spec", "schedulingPolicy", "gang", "minCount"); found && err == nil && n >= 1 {
		p.MinMember = int32(n)
		return p
	}
	if basic, err := MapField(u.Object, "spec", "schedulingPolicy", "basic"); err == nil && basic != nil {
		p.MinMember = 1
		return p
	}
	p.Err = fmt.Errorf("%s has neither spec.schedulingPolicy.gang.minCount >= 1 nor a basic policy", p.Source)
	return p
}

// nativeTopology reads spec.schedulingConstraints.topology of a
// scheduling.k8s.io PodGroup: a list of at most one {key}, required.
func nativeTopology(u *unstructured.Unstructured, src string) (*framework.TopologyConstraint, error) {
	list, err := ListField(u.Object, "spec", "schedulingConstraints", "topology")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology is not a list: %w", src, err)
	case len(list) == 0:
		return nil, nil
	case len(list) > 1:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology has %d entries; one is supported", src, len(list))
	}
	entry, ok := list[0].(map[string]any)
	var key string
	if ok {
		key, _ = StringField(entry, "", "key")
	}
	if key == "" {
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology[0].key is missing", src)
	}
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology[0].key %q is not a label key: %s", src, key, errs[0])
	}
	return &framework.TopologyConstraint{Key: key, Required: true, Source: src + " spec.schedulingConstraints.topology"}, nil
}

// volcanoTopology reads spec.networkTopology of a Volcano PodGroup: mode
// hard (the default) or soft, and highestTierAllowed (default 1), the
// widest network tier the gang may span.
func volcanoTopology(u *unstructured.Unstructured, src string) (*framework.TopologyConstraint, error) {
	nt, err := MapField(u.Object, "spec", "networkTopology")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: spec.networkTopology is not an object: %w", src, err)
	case nt == nil:
		return nil, nil
	}
	t := &framework.TopologyConstraint{Tier: 1, Required: true, Source: src + " spec.networkTopology"}
	switch mode, _, _ := Lookup(nt, "mode"); mode {
	case nil, "", "hard":
	case "soft":
		t.Required = false
	default:
		return nil, fmt.Errorf("%s: spec.networkTopology.mode %v is neither hard nor soft", src, mode)
	}
	if n, found, err := IntField(nt, "", "highestTierAllowed"); err != nil || (found && n < 1) {
		v, _, _ := Lookup(nt, "highestTierAllowed")
		return nil, fmt.Errorf("%s: spec.networkTopology.highestTierAllowed %v is not an integer >= 1", src, v)
	} else if found {
		t.Tier = int32(n)
	}
	return t, nil
}

// minMemberPolicy reads spec.minMember, as both the scheduler-plugins and
// the Volcano PodGroup spell the quorum.
func minMemberPolicy(kind framework.GroupKind) func(u *unstructured.Unstructured) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured) *framework.GroupPolicy {
		p := &framework.GroupPolicy{Source: source(kind, u)}
		n, found, err := IntField(u.Object, "", "spec", "minMember")
		if !found || err != nil || n < 1 {
			p.Err = fmt.Errorf("%s has no usable spec.minMember (an integer >= 1)", p.Source)
			return p
		}
		p.MinMember = int32(n)
		if kind == framework.GroupKindVolcano {
			if p.Topology, p.Err = volcanoTopology(u, p.Source); p.Err != nil {
				return p
			}
			// Volcano's own default for a PodGroup without a queue is
			// its default queue, which is ours too.
			if q, err := StringField(u.Object, "", "spec", "queue"); err == nil {
				p.Queue = q
			}
		}
		if kind == framework.GroupKindCoscheduling {
			p.ScheduleTimeoutSeconds = scheduleTimeout(u)
		}
		return p
	}
}

// scheduleTimeout reads spec.scheduleTimeoutSeconds of a scheduler-plugins
// PodGroup: 0 (none) when absent, not a positive integer, or of the wrong
// type; at most MaxInt32.
func scheduleTimeout(u *unstructured.Unstructured) int32 {
	n, found, err := IntField(u.Object, "", "spec", "scheduleTimeoutSeconds")
	switch {
	case err == nil && found && n > 0:
		return int32(n)
	case err != nil:
		// Past MaxInt32 is an error of IntField; the timeout is clamped.
		if v, _, _ := Lookup(u.Object, "spec", "scheduleTimeoutSeconds"); isHugeInt(v) {
			return math.MaxInt32
		}
	}
	return 0
}

// isHugeInt reports whether v is an integer past MaxInt32.
func isHugeInt(v any) bool {
	switch x := v.(type) {
	case int64:
		return x > math.MaxInt32
	case float64:
		return x == math.Trunc(x) && x > math.MaxInt32
	}
	return false
}
