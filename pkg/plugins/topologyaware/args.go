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

package topologyaware

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config/v1alpha1"
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

// Defaults of Args, those of the configuration API.
const (
	// DefaultMaxPlacements bounds how many domains of the constraint's
	// own level one cycle tries.
	DefaultMaxPlacements = v1alpha1.DefaultMaxPlacements
	// DefaultMaxNarrowerPlacements bounds how many domains of each level
	// narrower than the constraint's one cycle tries first.
	DefaultMaxNarrowerPlacements = v1alpha1.DefaultMaxNarrowerPlacements
	// roomPlacements is how many domains preemption tries.
	roomPlacements = 3
)

// Args are the plugin's args, typed in the configuration API
// (config.TopologyAwareArgs: defaults in its v1alpha1 version, validation
// in its validation package). Levels are the node labels of the topology
// levels, widest first; a constraint on a level tries the narrower levels
// first.
type Args = config.TopologyAwareArgs

// DefaultArgs returns the args used when none are given.
func DefaultArgs() Args {
	a, err := decodeArgs(nil)
	if err != nil {
		// The API's defaults are valid; TestDefaultArgs guards it.
		panic(err)
	}
	return a
}

// decodeArgs returns the plugin's args from its factory's: typed args as
// the configuration file gives them (decoded, defaulted, validated), the
// defaults for none, or raw args decoded as the file's would be.
func decodeArgs(args runtime.Object) (Args, error) {
	a, err := pluginutil.TypedArgs[Args](Name, args)
	if err != nil {
		return Args{}, err
	}
	return *a.DeepCopy(), nil
}
