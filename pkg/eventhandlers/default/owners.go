package defaulthandler

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// ownerKindNames are the names of the owner kinds in Args.OwnerGangs.
var ownerKindNames = map[string]framework.GroupKind{
	"Job":             framework.GroupKindJob,
	"RayCluster":      framework.GroupKindRayCluster,
	"JobSet":          framework.GroupKindJobSet,
	"LeaderWorkerSet": framework.GroupKindLeaderWorkerSet,
	"MPIJob":          framework.GroupKindMPIJob,
	"PyTorchJob":      framework.GroupKindPyTorchJob,
}

// knownOwnerKinds lists the names of ownerKindNames, sorted, for
// messages.
func knownOwnerKinds() string {
	names := make([]string, 0, len(ownerKindNames))
	for n := range ownerKindNames {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// OwnerGangs says, per owner kind, whether the pods of an owner of that
// kind that name no gang explicitly are one gang (see docs/scheduling.md,
// "Gangs inferred from the owner"). Keys are kind names: Job, RayCluster,
// JobSet, LeaderWorkerSet, MPIJob, PyTorchJob. A kind that is not listed
// keeps its default: every kind is inferred by default, each only where
// the API server serves it.
type OwnerGangs map[string]bool

// UnmarshalYAML decodes the mapping strictly: an unknown kind or a value
// that is not true or false is an error naming the line, the field and
// the value.
func (g *OwnerGangs) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.MappingNode {
		if node.Tag == "!!null" {
			return nil
		}
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ownerGangs: expected a mapping of kind to true or false (kinds: %s)",
			node.Line, knownOwnerKinds())}}
	}
	out := OwnerGangs{}
	var problems []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if _, ok := ownerKindNames[k.Value]; !ok {
			problems = append(problems, fmt.Sprintf("line %d: ownerGangs: unknown kind %q (known: %s)", k.Line, k.Value, knownOwnerKinds()))
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

// ownerKinds checks g (which an embedder may have built in code) and
// returns the owner kinds it enables over the defaults. Errors name the
// field and the value.
func (g OwnerGangs) ownerKinds() (framework.OwnerKinds, error) {
	kinds := framework.AllOwnerKinds()
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		kind, ok := ownerKindNames[n]
		if !ok {
			return 0, fmt.Errorf("ownerGangs: unknown kind %q (known: %s)", n, knownOwnerKinds())
		}
		if !g[n] {
			kinds = kinds.Without(kind)
		}
	}
	return kinds, nil
}
