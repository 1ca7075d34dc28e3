package defaulthandler

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// The gang dialects' group objects: the native, scheduler-plugins and
// Volcano PodGroups (and the batch/v1 Job, see ownerpolicies.go), their
// resources and quorum policies. See docs/scheduling.md, "Gang dialects".

// Resources of the PodGroups of the gang dialects.
var (
	nativeV1beta1GVR  = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}
	nativeV1alpha3GVR = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1alpha3", Resource: "podgroups"}
	coschedulingGVR   = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	volcanoGVR        = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

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
	if n, found, err := unstructured.NestedInt64(u.Object, "spec", "schedulingPolicy", "gang", "minCount"); found && err == nil && n >= 1 && n <= 1<<31-1 {
		p.MinMember = int32(n)
		return p
	}
	if _, found, _ := unstructured.NestedMap(u.Object, "spec", "schedulingPolicy", "basic"); found {
		p.MinMember = 1
		return p
	}
	p.Err = fmt.Errorf("%s has neither spec.schedulingPolicy.gang.minCount >= 1 nor a basic policy", p.Source)
	return p
}

// nativeTopology reads spec.schedulingConstraints.topology of a
// scheduling.k8s.io PodGroup: a list of at most one {key}, required.
func nativeTopology(u *unstructured.Unstructured, src string) (*framework.TopologyConstraint, error) {
	list, found, err := unstructured.NestedSlice(u.Object, "spec", "schedulingConstraints", "topology")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology is not a list: %w", src, err)
	case !found || len(list) == 0:
		return nil, nil
	case len(list) > 1:
		return nil, fmt.Errorf("%s: spec.schedulingConstraints.topology has %d entries; one is supported", src, len(list))
	}
	entry, ok := list[0].(map[string]any)
	key, _ := entry["key"].(string)
	if !ok || key == "" {
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
	nt, found, err := unstructured.NestedMap(u.Object, "spec", "networkTopology")
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: spec.networkTopology is not an object: %w", src, err)
	case !found:
		return nil, nil
	}
	t := &framework.TopologyConstraint{Tier: 1, Required: true, Source: src + " spec.networkTopology"}
	switch mode := nt["mode"]; mode {
	case nil, "", "hard":
	case "soft":
		t.Required = false
	default:
		return nil, fmt.Errorf("%s: spec.networkTopology.mode %v is neither hard nor soft", src, mode)
	}
	if v, ok := nt["highestTierAllowed"]; ok && v != nil {
		n, ok := v.(int64)
		if !ok || n < 1 || n > 1<<31-1 {
			return nil, fmt.Errorf("%s: spec.networkTopology.highestTierAllowed %v is not an integer >= 1", src, v)
		}
		t.Tier = int32(n)
	}
	return t, nil
}

// minMemberPolicy reads spec.minMember, as both the scheduler-plugins and
// the Volcano PodGroup spell the quorum.
func minMemberPolicy(kind framework.GroupKind) func(u *unstructured.Unstructured) *framework.GroupPolicy {
	return func(u *unstructured.Unstructured) *framework.GroupPolicy {
		p := &framework.GroupPolicy{Source: source(kind, u)}
		n, found, err := unstructured.NestedInt64(u.Object, "spec", "minMember")
		if !found || err != nil || n < 1 || n > 1<<31-1 {
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
			if q, found, err := unstructured.NestedString(u.Object, "spec", "queue"); found && err == nil {
				p.Queue = q
			}
		}
		if kind == framework.GroupKindCoscheduling {
			if t, found, err := unstructured.NestedInt64(u.Object, "spec", "scheduleTimeoutSeconds"); found && err == nil && t > 0 {
				p.ScheduleTimeoutSeconds = int32(min(t, 1<<31-1))
			}
		}
		return p
	}
}
