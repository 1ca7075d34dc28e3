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

package nodeledger

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Defaults of Args, those of the configuration API.
const (
	// DefaultPlacer is the name batch-scheduler joins ledgers under.
	DefaultPlacer = v1alpha1.DefaultNodeLedgerPlacer
	// DefaultReleaseInterval is how often the entries of pods that are
	// gone are released, and shared nodes not yet joined are joined.
	DefaultReleaseInterval = v1alpha1.DefaultNodeLedgerReleaseInterval
)

// Args are the plugin's args, typed in the configuration API
// (config.NodeLedgerArgs: defaults in its v1alpha1 version, validation in
// its validation package). NodeSelector is required: the VM manager
// places VMs on the same nodes (its --host-selector).
type Args = config.NodeLedgerArgs

// decodeArgs returns the plugin's args from its factory's (validated
// typed args, or raw args decoded as the file's would be) and their node
// selector.
func decodeArgs(args runtime.Object) (Args, labels.Selector, error) {
	a, err := pluginutil.TypedArgs[Args](Name, args)
	if err != nil {
		return Args{}, nil, err
	}
	sel, err := labels.Parse(a.NodeSelector)
	if err != nil {
		// Validation parsed it already.
		return Args{}, nil, fmt.Errorf("%s args: nodeSelector %q: %w", Name, a.NodeSelector, err)
	}
	return *a.DeepCopy(), sel, nil
}
