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

package config

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The typed args of the built-in event handlers. An eventHandlers entry
// for one of them ("default", "two-level") decodes its args into the
// handler's kind (DefaultHandlerArgs, TwoLevelHandlerArgs), defaulted and
// validated with the rest of the file; the handler's factory receives
// them. Vendors' handlers get RawArgs.
//
// Unlike the other internal types these carry YAML names: they are also
// the types the handler packages export as Args (defaulthandler.Args,
// twolevel.Args), which a vendor's handler may embed in the section it
// decodes itself with pkg/config.DecodeStrict (examples/vendor-handler).

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DefaultHandlerArgs are the args of the default event handler.
type DefaultHandlerArgs struct {
	metav1.TypeMeta `yaml:"-"`

	// DynamicResources lists resources, as "<plural>.<version>.<group>"
	// (e.g. "widgets.v1alpha1.example.com"), that the cache watches with
	// dynamic informers. Each of their events raises a cluster event.
	DynamicResources []string `yaml:"dynamicResources"`
	// ExternalWorkloadNodeLabel, when set, names a label on
	// ExternalWorkload objects whose value is the name of the node the
	// workload's usage is accounted to. Workloads without the label (or
	// with an empty value) fall back to spec.nodeName. Empty (the
	// default): spec.nodeName only.
	ExternalWorkloadNodeLabel string `yaml:"externalWorkloadNodeLabel"`
	// DisableGangDialects stops the handler from watching the objects of
	// the gang dialects (native, scheduler-plugins and Volcano PodGroups,
	// opted-in Jobs; see docs/scheduling.md). By default each one the API
	// server serves is watched.
	DisableGangDialects bool `yaml:"disableGangDialects"`
	// OwnerGangs turns the inference of gangs from pods' owners on or off
	// per owner kind; every kind is on by default, and watched where the
	// API server serves it.
	OwnerGangs OwnerGangs `yaml:"ownerGangs"`
	// DisableQueues stops the handler from watching queues (the project's
	// Queues and Volcano's; see docs/queues.md). By default each one the
	// API server serves is watched.
	DisableQueues bool `yaml:"disableQueues"`
}

// OwnerGangs says, per owner kind, whether the pods of an owner of that
// kind that name no gang explicitly are one gang (see docs/scheduling.md,
// "Gangs inferred from the owner"). Keys are OwnerGangKinds. A kind that
// is not listed keeps its default: every kind is inferred by default,
// each only where the API server serves it.
type OwnerGangs map[string]bool

// OwnerGangKinds are the owner kinds gangs are inferred from, sorted: the
// OwnerNames of the built-in gang dialects (pkg/dialects; the default
// handler's tests check the two agree).
var OwnerGangKinds = []string{"Job", "JobSet", "LeaderWorkerSet", "MPIJob", "PyTorchJob", "RayCluster"}

// IsOwnerGangKind reports whether kind is one of OwnerGangKinds.
func IsOwnerGangKind(kind string) bool {
	for _, k := range OwnerGangKinds {
		if k == kind {
			return true
		}
	}
	return false
}

// UnmarshalYAML decodes the mapping strictly: an unknown kind, a kind
// given twice or a value that is not true or false is an error naming the
// line, the field and the value. pkg/config applies the same check to the
// file's node before its typed decoding.
func (g *OwnerGangs) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.MappingNode {
		if node.Tag == "!!null" {
			return nil
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ownerGangs: expected a mapping of kind to true or false (kinds: %s)",
			node.Line, strings.Join(OwnerGangKinds, ", "))}}
	}
	out := OwnerGangs{}
	var problems []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if !IsOwnerGangKind(k.Value) {
			problems = append(problems, fmt.Sprintf("line %d: ownerGangs: unknown kind %q (known: %s)", k.Line, k.Value, strings.Join(OwnerGangKinds, ", ")))
			continue
		}
		if _, dup := out[k.Value]; dup {
			problems = append(problems, fmt.Sprintf("line %d: ownerGangs: kind %s is listed twice", k.Line, k.Value))
			continue
		}
		var enabled bool
		if v.Kind != yaml.ScalarNode || v.Tag != "!!bool" || v.Decode(&enabled) != nil {
			problems = append(problems, fmt.Sprintf("line %d: ownerGangs.%s: expected true or false, got %s", v.Line, k.Value, describeNode(v)))
			continue
		}
		out[k.Value] = enabled
	}
	if len(problems) > 0 {
		return &yaml.TypeError{Errors: problems}
	}
	*g = out
	return nil
}

// describeNode says what a YAML value is, for messages, with a short
// value quoted.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	return fmt.Sprintf("%q", v)
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TwoLevelHandlerArgs are the args of the two-level event handler: its
// own fields and, beside them in the same mapping, the default handler's.
type TwoLevelHandlerArgs struct {
	metav1.TypeMeta `yaml:"-"`

	// Framework is the name the allocator grants capacity to; grants
	// whose spec.framework differs are ignored. Required; a DNS label.
	Framework string `yaml:"framework"`
	// EvictOnRevoke makes the handler evict this scheduler's pods above a
	// shrunken grant through the Eviction API: whole gangs at a time,
	// never one below its quorum, lowest priority first.
	EvictOnRevoke bool `yaml:"evictOnRevoke"`
	// DefaultHandlerArgs are the default handler's args, inline.
	DefaultHandlerArgs `yaml:",inline"`
}
