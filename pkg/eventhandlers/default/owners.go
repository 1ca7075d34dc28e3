package defaulthandler

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"github.com/batch-scheduler/batch-scheduler/pkg/dialects"
	"github.com/batch-scheduler/batch-scheduler/pkg/framework"
)

// knownOwnerKinds lists the owner kinds of the built-in dialects, for
// messages.
func knownOwnerKinds() string { return dialects.Builtin().OwnerNames() }

// OwnerGangs says, per owner kind, whether the pods of an owner of that
// kind that name no gang explicitly are one gang (see docs/scheduling.md,
// "Gangs inferred from the owner"). Keys are kind names: Job, RayCluster,
// JobSet, LeaderWorkerSet, MPIJob, PyTorchJob (the OwnerNames of the
// table of dialects, pkg/dialects). A kind that is not listed
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
		if _, ok := dialects.Builtin().OwnerKind(k.Value); !ok {
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

// ownerKinds checks g (which an embedder may have built in code) against
// the owner kinds of table and returns the owner kinds it enables over the
// defaults. Errors name the field and the value.
func (g OwnerGangs) ownerKinds(table dialects.Table) (framework.OwnerKinds, error) {
	return table.OwnerKinds(g)
}
