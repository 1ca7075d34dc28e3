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

package noderesources

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-scheduler/batch-scheduler/pkg/apis/config"
	pkgconfig "github.com/batch-scheduler/batch-scheduler/pkg/config"
	"github.com/batch-scheduler/batch-scheduler/pkg/plugins/pluginutil"
)

// Args are the plugin's args, typed in the configuration API
// (config.NodeResourcesFitArgs: defaults in its v1alpha1 version,
// validation in its validation package). Two shapes are read from a
// file: this plugin's own (scoringStrategy: LeastAllocated, resources
// beside it) and kube-scheduler's (scoringStrategy: {type, resources}), so
// that a kube-scheduler profile's args work unchanged.
type Args = config.NodeResourcesFitArgs

// ScoringStrategy says which nodes Score prefers.
type ScoringStrategy = config.ScoringStrategyType

// The scoring strategies.
const (
	LeastAllocated = config.LeastAllocated
	MostAllocated  = config.MostAllocated
)

// Weight bounds of a scored resource.
const (
	MinResourceWeight = config.MinResourceWeight
	MaxResourceWeight = config.MaxResourceWeight
)

// ResourceWeight is a resource Score looks at, and its weight in the
// average.
type ResourceWeight = config.ResourceSpec

// DefaultArgs returns the args used when none are given.
func DefaultArgs() Args {
	a, err := complete(Args{})
	if err != nil {
		// The defaults are valid; a test guards it.
		panic(fmt.Sprintf("%s: the default args are invalid: %v", Name, err))
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

// complete fills in what a leaves unset (the strategy, the resources and
// zero weights) with the API's defaults and validates the result.
func complete(a Args) (Args, error) {
	obj, err := pkgconfig.CompletePluginArgs(Name, &a)
	if err != nil {
		return Args{}, err
	}
	return *obj.(*Args), nil
}

// Validate checks defaulted args and names every bad field.
func Validate(a *Args) error {
	if err := pkgconfig.ValidatePluginArgs(Name, a); err != nil {
		return err
	}
	return nil
}
