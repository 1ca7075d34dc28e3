package noderesources

import (
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// strategyIsMapping reports whether the args' scoringStrategy is a
// mapping (kube-scheduler's shape). Args that do not parse are left to
// the strict decoder, which says what is wrong.
func strategyIsMapping(data []byte) bool {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return false
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "scoringStrategy" {
			return m.Content[i+1].Kind == yaml.MappingNode
		}
	}
	return false
}

// ScoringStrategy says which nodes Score prefers.
type ScoringStrategy string

const (
	// LeastAllocated prefers the nodes with the most free resources left
	// after placing the pod (spreading).
	LeastAllocated ScoringStrategy = "LeastAllocated"
	// MostAllocated prefers the nodes with the least free resources left
	// after placing the pod (bin packing).
	MostAllocated ScoringStrategy = "MostAllocated"
)

// Weight bounds of a scored resource.
const (
	MinResourceWeight int64 = 1
	MaxResourceWeight int64 = 100
)

// ResourceWeight is a resource Score looks at, and its weight in the
// average.
type ResourceWeight struct {
	Name v1.ResourceName `yaml:"name"`
	// Weight is in [MinResourceWeight, MaxResourceWeight]; 0 means 1.
	Weight int64 `yaml:"weight"`
}

// Args are the plugin's args.
type Args struct {
	// ScoringStrategy defaults to LeastAllocated.
	ScoringStrategy ScoringStrategy `yaml:"scoringStrategy"`
	// Resources default to cpu and memory with weight 1.
	Resources []ResourceWeight `yaml:"resources"`
}

// DefaultArgs returns the args used when none are given.
func DefaultArgs() Args {
	return Args{
		ScoringStrategy: LeastAllocated,
		Resources: []ResourceWeight{
			{Name: v1.ResourceCPU, Weight: 1},
			{Name: v1.ResourceMemory, Weight: 1},
		},
	}
}

// kubeSchedulerArgs is the shape of kube-scheduler's NodeResourcesFitArgs
// that this plugin reads: scoringStrategy as a mapping of type and
// resources. Its other fields (ignoredResources, ignoredResourceGroups)
// are left out, so strict decoding names them as unknown.
type kubeSchedulerArgs struct {
	ScoringStrategy struct {
		Type      ScoringStrategy  `yaml:"type"`
		Resources []ResourceWeight `yaml:"resources"`
		// RequestedToCapacityRatio is decoded only to be refused at its
		// line.
		RequestedToCapacityRatio yaml.Node `yaml:"requestedToCapacityRatio"`
	} `yaml:"scoringStrategy"`
	Resources []ResourceWeight `yaml:"resources"`
}

// decodeArgs reads args strictly, fills in defaults and validates. Two
// shapes are read: this plugin's own (scoringStrategy: LeastAllocated,
// resources beside it) and kube-scheduler's (scoringStrategy: {type,
// resources}), so that a kube-scheduler profile's args work unchanged.
func decodeArgs(r io.Reader) (Args, error) {
	var a Args
	if r == nil {
		a.Default()
		return a, nil
	}
	src := config.SourceOf(r)
	data, err := io.ReadAll(r)
	if err != nil {
		return Args{}, fmt.Errorf("%s args: reading: %w", Name, err)
	}
	if strategyIsMapping(data) {
		var k kubeSchedulerArgs
		if err := pluginutil.DecodeArgs(Name, config.NewSection(src, data), &k); err != nil {
			return Args{}, err
		}
		if n := k.ScoringStrategy.RequestedToCapacityRatio; n.Kind != 0 {
			return Args{}, fmt.Errorf("%s args: line %d: scoringStrategy.requestedToCapacityRatio is not supported (types: %s, %s)", Name, n.Line, LeastAllocated, MostAllocated)
		}
		if len(k.Resources) > 0 && len(k.ScoringStrategy.Resources) > 0 {
			return Args{}, fmt.Errorf("%s args: resources are given twice, beside scoringStrategy and in it; keep one", Name)
		}
		a = Args{ScoringStrategy: k.ScoringStrategy.Type, Resources: k.Resources}
		if len(k.ScoringStrategy.Resources) > 0 {
			a.Resources = k.ScoringStrategy.Resources
		}
	} else if err := pluginutil.DecodeArgs(Name, config.NewSection(src, data), &a); err != nil {
		return Args{}, err
	}
	a.Default()
	if err := a.Validate(); err != nil {
		return Args{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return a, nil
}

// Default fills in what a leaves unset: the strategy, the resources and
// zero weights.
func (a *Args) Default() {
	d := DefaultArgs()
	if a.ScoringStrategy == "" {
		a.ScoringStrategy = d.ScoringStrategy
	}
	if len(a.Resources) == 0 {
		a.Resources = d.Resources
		return
	}
	a.Resources = append([]ResourceWeight(nil), a.Resources...)
	for i := range a.Resources {
		if a.Resources[i].Weight == 0 {
			a.Resources[i].Weight = 1
		}
	}
}

// Validate checks defaulted args and names the first bad field.
func (a *Args) Validate() error {
	switch a.ScoringStrategy {
	case LeastAllocated, MostAllocated:
	default:
		return fmt.Errorf("scoringStrategy: unknown strategy %q (want %s or %s)", a.ScoringStrategy, LeastAllocated, MostAllocated)
	}
	if len(a.Resources) == 0 {
		return fmt.Errorf("resources: at least one resource is required")
	}
	seen := make(map[v1.ResourceName]bool, len(a.Resources))
	for i, r := range a.Resources {
		field := fmt.Sprintf("resources[%d]", i)
		if r.Name == "" {
			return fmt.Errorf("%s.name: required", field)
		}
		if errs := validation.IsQualifiedName(string(r.Name)); len(errs) > 0 {
			return fmt.Errorf("%s.name: %q is not a valid resource name: %s", field, r.Name, strings.Join(errs, "; "))
		}
		if seen[r.Name] {
			return fmt.Errorf("%s.name: resource %q is listed more than once", field, r.Name)
		}
		seen[r.Name] = true
		if r.Weight < MinResourceWeight || r.Weight > MaxResourceWeight {
			return fmt.Errorf("%s.weight: must be between %d and %d, got %d", field, MinResourceWeight, MaxResourceWeight, r.Weight)
		}
	}
	return nil
}
