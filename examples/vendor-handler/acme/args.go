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

package acme

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	defaulthandler "github.com/batch-scheduler/batch-scheduler/pkg/eventhandlers/default"
)

// DefaultPoolLabel is the label a node must carry to be used when the
// configuration names no other.
const DefaultPoolLabel = "acme.example.com/pool"

// Args is the handler's section of the configuration file.
type Args struct {
	// PoolLabel is the key of the label that puts a node in the pool this
	// scheduler uses. The label's value does not matter. Default:
	// DefaultPoolLabel.
	PoolLabel string `yaml:"poolLabel"`
	// Reserve is subtracted from the allocatable of every node in the
	// pool. Resources it does not list are left as they are. Default:
	// nothing is reserved.
	Reserve Reserve `yaml:"reserve"`
	// Default holds the settings of the default handler the acme handler
	// is built on.
	Default defaulthandler.Args `yaml:"default"`
}

// DefaultArgs returns the settings used for fields the configuration
// leaves out.
func DefaultArgs() Args {
	return Args{PoolLabel: DefaultPoolLabel}
}

// Validate checks what decoding alone cannot. The reserve is checked while
// it is decoded, because only then are the lines of its entries known.
func (a *Args) Validate() error {
	if a.PoolLabel == "" {
		return fmt.Errorf("poolLabel must not be empty (leave it out for %q)", DefaultPoolLabel)
	}
	if errs := validation.IsQualifiedName(a.PoolLabel); len(errs) > 0 {
		return fmt.Errorf("poolLabel %q is not a valid label key: %s", a.PoolLabel, strings.Join(errs, "; "))
	}
	// A Reserve built in code rather than decoded gets the same checks.
	for _, name := range slices.Sorted(maps.Keys(a.Reserve)) {
		q := a.Reserve[name]
		if err := checkReserveEntry(string(name), q); err != nil {
			return fmt.Errorf("reserve.%s: %w", name, err)
		}
	}
	return nil
}

// Reserve maps a resource name to the quantity of it that the scheduler
// must not use on any node. In YAML it is a mapping of quantities in the
// usual Kubernetes notation: {cpu: 500m, memory: 512Mi}.
type Reserve map[v1.ResourceName]resource.Quantity

// UnmarshalYAML decodes a reserve, checking each entry: the name must be a
// valid resource name and the quantity a non-negative Kubernetes quantity.
// Errors name the entry and its line.
func (r *Reserve) UnmarshalYAML(node *yaml.Node) error {
	if node.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: reserve: expected a mapping of resource names to quantities, such as {cpu: 500m, memory: 512Mi}", node.Line)
	}
	out := make(Reserve, len(node.Content)/2)
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], node.Content[i+1]
		name := key.Value
		if key.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: reserve: a resource name must be a string", key.Line)
		}
		if _, dup := out[v1.ResourceName(name)]; dup {
			return fmt.Errorf("line %d: reserve.%s is listed twice", key.Line, name)
		}
		if value.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: reserve.%s: expected a quantity such as 500m or 512Mi", value.Line, name)
		}
		q, err := resource.ParseQuantity(value.Value)
		if err != nil {
			return fmt.Errorf("line %d: reserve.%s: %q is not a quantity: %w", value.Line, name, value.Value, err)
		}
		if err := checkReserveEntry(name, q); err != nil {
			return fmt.Errorf("line %d: reserve.%s: %w", key.Line, name, err)
		}
		out[v1.ResourceName(name)] = q
	}
	*r = out
	return nil
}

// checkReserveEntry checks one entry of a reserve.
func checkReserveEntry(name string, q resource.Quantity) error {
	if errs := validation.IsQualifiedName(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid resource name: %s", name, strings.Join(errs, "; "))
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%s is negative; a reserve can only take capacity away", q.String())
	}
	return nil
}
