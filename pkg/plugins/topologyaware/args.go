package topologyaware

import (
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Well-known topology levels, the defaults of Args.Levels.
const (
	// BlockLabel and RackLabel name a block (a group of racks under one
	// spine) and a rack; HostnameLabel is a node's own label.
	BlockLabel    = "topology.kubernetes.io/block"
	RackLabel     = "topology.kubernetes.io/rack"
	HostnameLabel = "kubernetes.io/hostname"
)

// Defaults of Args.
const (
	// DefaultMaxPlacements bounds how many domains of the constraint's
	// own level one cycle tries.
	DefaultMaxPlacements = 8
	// DefaultMaxNarrowerPlacements bounds how many domains of each level
	// narrower than the constraint's one cycle tries first.
	DefaultMaxNarrowerPlacements = 2
	// roomPlacements is how many domains preemption tries.
	roomPlacements = 3
)

// Args are the plugin's args.
type Args struct {
	// Levels are the node labels of the topology levels, widest first
	// (e.g. block, rack, hostname). A constraint on a level tries the
	// narrower levels first, so that a gang that fits in one rack of the
	// block it asked for gets that rack; a Volcano network tier t is the
	// t-th level counted from the narrowest but the hostname.
	Levels []string `yaml:"levels"`
	// MaxPlacements bounds the domains of the constraint's level tried in
	// one cycle, best fit first; 0 means DefaultMaxPlacements.
	MaxPlacements int `yaml:"maxPlacements"`
	// MaxNarrowerPlacements bounds the domains of each narrower level
	// tried before them; 0 means DefaultMaxNarrowerPlacements, -1 none.
	MaxNarrowerPlacements int `yaml:"maxNarrowerPlacements"`
}

// DefaultArgs returns the args used when none are given.
func DefaultArgs() Args {
	return Args{
		Levels:                []string{BlockLabel, RackLabel, HostnameLabel},
		MaxPlacements:         DefaultMaxPlacements,
		MaxNarrowerPlacements: DefaultMaxNarrowerPlacements,
	}
}

// decodeArgs reads args strictly, fills in defaults and validates.
func decodeArgs(r io.Reader) (Args, error) {
	var a Args
	if r != nil {
		if err := pluginutil.DecodeArgs(Name, r, &a); err != nil {
			return Args{}, err
		}
	}
	d := DefaultArgs()
	if len(a.Levels) == 0 {
		a.Levels = d.Levels
	}
	if a.MaxPlacements == 0 {
		a.MaxPlacements = d.MaxPlacements
	}
	if a.MaxNarrowerPlacements == 0 {
		a.MaxNarrowerPlacements = d.MaxNarrowerPlacements
	}
	if err := a.validate(); err != nil {
		return Args{}, fmt.Errorf("%s args: %w", Name, err)
	}
	return a, nil
}

func (a Args) validate() error {
	seen := map[string]bool{}
	for i, l := range a.Levels {
		if errs := validation.IsQualifiedName(l); len(errs) > 0 {
			return fmt.Errorf("levels[%d] %q is not a node label key: %s", i, l, errs[0])
		}
		if seen[l] {
			return fmt.Errorf("levels[%d] %q is listed twice", i, l)
		}
		seen[l] = true
	}
	if a.MaxPlacements < 1 {
		return fmt.Errorf("maxPlacements %d must be at least 1", a.MaxPlacements)
	}
	if a.MaxNarrowerPlacements < -1 {
		return fmt.Errorf("maxNarrowerPlacements %d must be -1 (none) or more", a.MaxNarrowerPlacements)
	}
	return nil
}
