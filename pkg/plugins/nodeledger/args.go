package nodeledger

import (
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Defaults of Args.
const (
	// DefaultPlacer is the name batch-scheduler joins ledgers under.
	DefaultPlacer = "batch-scheduler"
	// DefaultReleaseInterval is how often the entries of pods that are
	// gone are released, and shared nodes not yet joined are joined.
	DefaultReleaseInterval = 500 * time.Millisecond
)

// Args are the plugin's args.
type Args struct {
	// NodeSelector selects the shared nodes, in label selector syntax
	// ("batch-scheduler.io/shared=vms"). Required: the VM manager places
	// VMs on the same nodes (its --host-selector).
	NodeSelector string `yaml:"nodeSelector"`
	// Placer is the name this scheduler joins ledgers and records its
	// pods under (the VM manager's --ledger-require names it); default
	// DefaultPlacer.
	Placer string `yaml:"placer"`
	// ReleaseInterval is how often released pods' entries are removed;
	// default DefaultReleaseInterval.
	ReleaseInterval time.Duration `yaml:"releaseInterval"`
}

// decodeArgs reads args strictly, fills in defaults and validates.
func decodeArgs(r io.Reader) (Args, labels.Selector, error) {
	var a Args
	if r != nil {
		if err := pluginutil.DecodeArgs(Name, r, &a); err != nil {
			return Args{}, nil, err
		}
	}
	if a.Placer == "" {
		a.Placer = DefaultPlacer
	}
	if a.ReleaseInterval == 0 {
		a.ReleaseInterval = DefaultReleaseInterval
	}
	sel, err := a.validate()
	if err != nil {
		return Args{}, nil, fmt.Errorf("%s args: %w", Name, err)
	}
	return a, sel, nil
}

func (a Args) validate() (labels.Selector, error) {
	if a.NodeSelector == "" {
		return nil, errors.New("nodeSelector: required (the label selector of the nodes shared with a VM manager)")
	}
	sel, err := labels.Parse(a.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("nodeSelector %q: %w", a.NodeSelector, err)
	}
	if sel.Empty() {
		return nil, fmt.Errorf("nodeSelector %q selects every node; name the label of the shared ones", a.NodeSelector)
	}
	if errs := validation.IsDNS1123Subdomain(a.Placer); len(errs) > 0 {
		return nil, fmt.Errorf("placer %q: %s", a.Placer, errs[0])
	}
	if a.ReleaseInterval < 0 {
		return nil, fmt.Errorf("releaseInterval %s: must not be negative", a.ReleaseInterval)
	}
	return sel, nil
}
